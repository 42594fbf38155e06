import os

# Tests run on the CPU (CI has no accelerator).
os.environ.setdefault("JAX_PLATFORMS", "cpu")
