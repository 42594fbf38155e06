"""jaxviz on the programs users really write: the zoo in ``frameworks.py``."""

import jax
import pytest
from frameworks import ZOO


@pytest.mark.parametrize("entry", ZOO, ids=lambda e: e.name)
def test_zoo_program_runs_as_written(entry):
    """Each zoo program builds, runs for real, and its library traces it."""
    fn, args, kwargs = entry.build()
    assert entry.real_outputs(fn, args, kwargs) > 0
    reference = entry.reference(fn, args, kwargs)
    assert isinstance(reference, jax.extend.core.ClosedJaxpr)
    assert reference.jaxpr.outvars
