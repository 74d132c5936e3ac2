"""What a measurement records of the machine it ran on (imported by the benchmark summarisers)."""


def cpu_model():
    """The CPU's model name as /proc/cpuinfo gives it."""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"
