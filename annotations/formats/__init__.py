"""Framework-free file and byte formats: TREC readers and writers, the Arrow run reader, the
byte layouts of rankings and scores, report tables. Nothing here imports Django or DRF."""
