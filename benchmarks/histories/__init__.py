"""Recompile histories taken from real user reports, one module per library or theme.

Each history is a small program, written here in the style of the library it uses, that
replays the situation of one public issue thread or forum post (its URL is in the
``url`` field and in a comment above the program). Its last compile of ``function`` has
one true cause, stated from the program: a kind and the argument path as the user wrote
it (field path included), and, where the report asks for them, words the explanation
must say (``says``: the before and after values, or "identity" for an object compared by
identity).

The histories that need several devices say how many (``devices``); whoever runs them
sets ``--xla_force_host_platform_device_count`` before JAX starts (``bench_causes.py`` does).
"""

import importlib

from .record import HISTORIES, History, history

# One module per library or theme; a module whose library is not installed is left out
# (its histories are then missing from HISTORIES, and the bench says which).
MODULES = ("plain_jit", "static_args", "pytrees", "function_identity", "devices", "donation",
           "cache_clearing", "pmap_vmap", "equinox_histories", "flax_nnx", "flax_linen",
           "haiku_histories", "optax_histories", "numpyro_histories", "blackjax_histories",
           "diffrax_histories", "optimistix_histories", "mctx_histories")
LIBRARIES = ("equinox", "flax", "haiku", "optax", "numpyro", "blackjax", "diffrax", "optimistix",
             "mctx")
SKIPPED: dict[str, str] = {}  # module → the import error that left it out
for _module in MODULES:
    try:
        importlib.import_module(f"{__name__}.{_module}")
    except ModuleNotFoundError as error:  # only a missing library; any other error shows
        if error.name not in LIBRARIES:
            raise
        SKIPPED[_module] = f"{error.name} is not installed"

__all__ = ["HISTORIES", "MODULES", "LIBRARIES", "SKIPPED", "History", "history"]
