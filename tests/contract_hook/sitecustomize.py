"""Started by every Python the suite starts while MEMPLACE_TEST_CONTRACT is set (the suite
puts this folder first on PYTHONPATH): the same names of `memplace.contract` changed there
as in the suite's own process (tests/conftest.py)."""

import os

if os.environ.get("MEMPLACE_TEST_CONTRACT"):
    from memplace import contract

    for item in os.environ["MEMPLACE_TEST_CONTRACT"].split(","):
        name, _, value = item.partition("=")
        setattr(contract, name, value)
