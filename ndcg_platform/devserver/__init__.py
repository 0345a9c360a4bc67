"""The development server, as runserver (with static files) but passing the raw request
target in REQUEST_URI, as gunicorn passes RAW_URI: so that a %2F in a path reaches the
same object there as in production (annotations.middleware.RawPathMiddleware). Listed
before django.contrib.staticfiles so that its runserver is the one `manage.py` runs."""
