"""The user guide's examples run and print what the pages show."""

import doctest
from pathlib import Path

import pytest

PAGES = ["factor_graphs.rst", "migrating.rst", "multilabel.rst", "trees.rst",
         "choosing_an_estimator.rst", "sequences.rst"]
GUIDE = Path(__file__).resolve().parent.parent / "doc" / "user_guide"


@pytest.mark.parametrize("page", PAGES)
def test_user_guide_page_examples(page):
    path = GUIDE / page
    if not path.exists():
        pytest.skip("the documentation sources are not next to the tests")
    result = doctest.testfile(str(path), module_relative=False,
                              optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
