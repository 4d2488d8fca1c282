"""The per-row pieces of HTML: exactly what the templates drew, every value escaped."""

from __future__ import annotations

import pytest

from airflow_leastaction.www.fragments import badge, task_instance, to_airflow
from airflow_leastaction.www.links import AirflowLinks
from airflow_leastaction.www.render import templates

LINKS = AirflowLinks.under("/airflow/leastaction")


class TestBadge:
    @pytest.mark.parametrize(
        ("value", "label", "html"),
        [
            ("SATISFIED", None, '<span class="badge tone-success">SATISFIED</span>'),
            ("failed", "stale", '<span class="badge tone-failed">stale</span>'),
            (None, None, '<span class="badge tone-none">—</span>'),
            ("", "", '<span class="badge tone-none">—</span>'),
            ("<b>", None, '<span class="badge tone-none">&lt;b&gt;</span>'),
            (
                "MISSING",
                'a "dep" & <x>',
                '<span class="badge tone-upstream_failed">a &#34;dep&#34; &amp; &lt;x&gt;</span>',
            ),
            (3, None, '<span class="badge tone-none">3</span>'),
        ],
    )
    def test_badge_shows_tone_and_escaped_label(self, value, label, html):
        assert str(badge(value, label)) == html


class TestLinks:
    def test_to_airflow_opens_at_the_top_escaped(self):
        assert str(to_airflow("/dags/a?x=1&y=2", "<t>")) == '<a href="/dags/a?x=1&amp;y=2" target="_top">&lt;t&gt;</a>'
        assert str(to_airflow("/r", "run", "mono")) == '<a href="/r" target="_top" class="mono">run</a>'

    def test_task_instance_links_dag_task_and_run(self):
        html = str(task_instance(LINKS, "d<1>", "r/1", "t", 2))
        assert html == (
            '<a href="/airflow/dags/d%3C1%3E" target="_top">d&lt;1&gt;</a> · '
            '<a href="/airflow/dags/d%3C1%3E/runs/r%2F1/tasks/t/mapped/2" target="_top">t[2]</a> ·\n'
            '<a href="/airflow/dags/d%3C1%3E/runs/r%2F1" target="_top" class="mono">r/1</a>\n'
        )

    def test_task_instance_not_mapped_has_no_index(self):
        assert ">t</a>" in str(task_instance(LINKS, "d", "r", "t"))


def test_templates_escape_what_the_functions_are_given():
    rendered = templates.env.from_string("{{ badge(v) }}{{ to_airflow(h, v) }}").render(v="<s>", h="/x")
    assert "<s>" not in rendered and rendered.count("&lt;s&gt;") == 2
