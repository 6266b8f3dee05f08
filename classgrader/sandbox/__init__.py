"""The bubblewrap sandbox: its command line and limits, its mode, and the driver that runs inside it."""
