"""A change of the deployment's gate mode wakes every waiting gate; the same mode written again does not."""

from __future__ import annotations

from airflow_leastaction.triggers.poller import CatalogPoller, Subscription


def woken_by(monkeypatch, settings: list[str]) -> list[bool]:
    """Whether a waiting gate (woken only by a change) was woken on each tick, the setting as given."""
    poller = CatalogPoller(None, 30.0)
    sub = Subscription(())
    sub.served, sub.every_tick = True, False
    poller._subs[id(sub)] = sub
    woken = []
    for text in settings:
        monkeypatch.setenv("AIRFLOW__LEASTACTION__GATES", text)
        poller._deliver([], set())
        woken.append(sub._ready)
        sub._ready = False
    return woken


def test_the_same_mode_written_in_another_case_wakes_no_gate(monkeypatch):
    assert woken_by(monkeypatch, ["warn", " WARN ", "Warn"]) == [False, False, False]


def test_a_new_mode_wakes_the_waiting_gates_once(monkeypatch):
    assert woken_by(monkeypatch, ["enforce", "warn", "warn", "", "off"]) == [False, True, False, True, True]


def test_a_setting_that_names_no_mode_wakes_the_gates_to_say_so_and_again_when_it_is_fixed(monkeypatch):
    assert woken_by(monkeypatch, ["enforce", "strict", "strict", "enforce"]) == [False, True, False, True]
