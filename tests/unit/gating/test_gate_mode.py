"""The gate mode: ``[leastaction] gates`` is enforce, warn or off, read in any case; anything else is refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_leastaction.exceptions import ConfigurationError
from airflow_leastaction.gating.admission import GateMode, gate_mode

MODES = {"enforce": False, "warn": True, "off": True}


def written(word: str):
    """``word`` in mixed case, with blanks around it, as a person may write a setting."""
    return st.tuples(
        st.sampled_from(["", " ", "\t"]), st.lists(st.booleans(), min_size=len(word), max_size=len(word))
    ).map(lambda t: f"{t[0]}{''.join(c.upper() if up else c for c, up in zip(word, t[1], strict=True))}{t[0]}")


@given(st.sampled_from(sorted(MODES)).flatmap(lambda w: st.tuples(st.just(w), written(w))))
def test_each_mode_reads_in_any_case_and_keeps_its_text(case):
    word, text = case
    mode = GateMode.parse(text)
    assert mode == word and mode.value == word and f"gates={mode}" == f"gates={word}"
    assert mode.relaxed is MODES[word]


@given(st.text(max_size=10).filter(lambda t: t.strip().lower() not in {*MODES, ""}))
def test_any_other_setting_is_refused_naming_the_setting(text):
    with pytest.raises(ConfigurationError, match=r"\[leastaction\] gates"):
        GateMode.parse(text)


def test_the_mode_is_enforce_by_default_and_when_the_setting_is_blank(monkeypatch):
    monkeypatch.delenv("AIRFLOW__LEASTACTION__GATES", raising=False)
    assert gate_mode() is GateMode.ENFORCE
    monkeypatch.setenv("AIRFLOW__LEASTACTION__GATES", "  ")
    assert gate_mode() is GateMode.ENFORCE


def test_a_mode_carried_from_the_triggerer_wins_over_the_setting_of_this_process(monkeypatch):
    monkeypatch.setenv("AIRFLOW__LEASTACTION__GATES", "enforce")
    assert gate_mode("warn") is GateMode.WARN
    assert gate_mode(GateMode.OFF) is GateMode.OFF
    assert gate_mode(None) is GateMode.ENFORCE
    monkeypatch.setenv("AIRFLOW__LEASTACTION__GATES", " Off ")
    assert gate_mode() is GateMode.OFF
