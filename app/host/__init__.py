"""The host layer: the machine (devices, sysfs, safety, programs, audit, tuning, telemetry, counters)."""
