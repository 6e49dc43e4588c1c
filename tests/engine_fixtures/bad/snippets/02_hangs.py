"""Fixture: never finishes (waits for input that never comes)."""

import time

print("waiting", flush=True)
while True:
    time.sleep(0.05)
