"""viz/class_mode.py: the class's answer spread and reveal (issue 34: the reveal chart's legend sat on its title)."""

from __future__ import annotations

import pytest

from viz.class_mode import answer_bars
from viz.theme import fonts, title_margin


@pytest.mark.parametrize("lecture", [False, True])
def test_the_reveal_legend_has_its_own_row_between_the_title_and_the_plot(lecture):
    fig = answer_bars([2, 0, 5], ["cat", "mat", "it"], answer=2, weights=[0.1, 0.2, 0.7], title="The class's answers",
                      lecture=lecture, lang="ko")
    lay = fig.layout
    assert (lay.title.yref, lay.title.y, lay.title.yanchor) == ("container", 1.0, "top")  # the title at the top
    assert (lay.legend.orientation, lay.legend.y, lay.legend.yanchor) == ("h", 1.0, "bottom")  # the legend on the plot
    legend_row = int(fonts(lecture)["legend"] * 1.8)
    assert lay.margin.t == title_margin(lecture) + legend_row  # room for both, one above the other
    assert lay.title.font.size + 24 <= title_margin(lecture)  # the title fits its part of the margin
    assert [d.name for d in fig.data] == ["학생 수", "모델의 가중치"] and fig.data[1].yaxis == "y2"


def test_before_the_reveal_there_is_no_legend():
    fig = answer_bars([1, 3], ["a", "b"], title="spread")
    assert fig.layout.showlegend is False and fig.layout.margin.t == title_margin(False)
    assert list(fig.data[0].y) == [1, 3]
