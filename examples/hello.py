"""A first script for maibox: shows who and where the code runs."""
import os
import platform
import socket

print(f"Hello from Python {platform.python_version()} in a maibox sandbox")
print(f"uid={os.getuid()} gid={os.getgid()} pid={os.getpid()} host={socket.gethostname()}")
print(f"network interfaces: {[name for _, name in socket.if_nameindex()]}")
print(f"visible at /: {sorted(os.listdir('/'))}")
