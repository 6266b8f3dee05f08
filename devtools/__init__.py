"""Support for the tests and benchmarks: sample submissions and a Dask cluster on this machine. Not shipped."""
