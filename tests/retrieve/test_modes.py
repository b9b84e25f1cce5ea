from typing import get_args

from hyperfolio.retrieve import STRATEGIES, RetrievalMode


def test_the_mode_type_lists_every_strategy_in_order():
    assert get_args(RetrievalMode) == tuple(STRATEGIES)
