"""A first script for maibox: shows who and where the code runs."""
import os
import platform
import socket

print(f"Hello from Python {platform.python_version()} in a maibox sandbox")
print(f"uid={os.getuid()} gid={os.getgid()} pid={os.getpid()} host={socket.gethostname()}")
ifaces = [line.split(":")[0].strip() for line in open("/proc/net/dev").read().splitlines()[2:]]
print(f"network interfaces: {ifaces}")
print(f"visible at /: {sorted(os.listdir('/'))}")
