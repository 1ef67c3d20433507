"""Test support for the pytest suites and the scripts: emulators, a counting proxy, helpers."""
