"""The development server for `make demo`: after its banner, the address it really listens
on and the demo accounts, so the banner does not push them out of sight."""

from django.contrib.staticfiles.management.commands.runserver import Command as RunserverCommand

from annotations.management.commands.load_demo import accounts_file


class Command(RunserverCommand):
    help = "Serve the demo (runserver), then print its address and the demo accounts"

    def on_bind(self, server_port: int) -> None:
        super().on_bind(server_port)
        addr = str(getattr(self, "addr", "127.0.0.1"))
        host = "127.0.0.1" if addr in ("0", "0.0.0.0") else addr
        host = f"[{host}]" if getattr(self, "_raw_ipv6", False) else host
        lines = [f"\nThe demo is at {self.protocol}://{host}:{server_port}/"]
        path = accounts_file()
        if path.exists():
            lines += [path.read_text().rstrip(), f"(also in {path})"]
        self.stdout.write("\n".join(lines) + "\n")
