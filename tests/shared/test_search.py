"""The shared search: it times every candidate once per key, launches the winner directly after that,
reports the choice, and takes the first candidate untimed where nothing can be timed (CPU, fake timer)."""

import pytest
import torch

from implementations.core import search


def fake_search(calls, **fields):
    """Candidates "a", "b", "c"; each launch records its name, the shared refresh records "refresh"."""
    def prepare(a, b, c, candidates):
        return (lambda: calls.append("refresh")), {cand: (lambda cand=cand: calls.append(cand)) for cand in candidates}

    return search.Search("tests.fake", "triton", ("a", "b", "c"), prepare, tile=lambda cand: (ord(cand), 1),
                         **fields)


@pytest.fixture
def timed(monkeypatch):
    """The search times here as on a GPU, with do_bench replaced by a table of times (ms)."""
    times = {"a": 3.0, "b": 1.0, "c": 2.0}
    timed_calls = []

    def do_bench(fn, warmup, rep):
        before = len(calls)
        fn()
        name = calls[-1]
        del calls[before:]
        timed_calls.append(name)
        return times[name]

    calls = []
    monkeypatch.setattr(search, "untimed_reason", lambda device: "")
    monkeypatch.setattr("triton.testing.do_bench", do_bench)
    return calls, timed_calls


def operands(M=8, N=4, K=2):
    return torch.zeros(M, K), torch.zeros(K, N), torch.zeros(M, N)


def test_the_first_call_times_every_candidate_then_launches_the_winner(timed):
    calls, timed_calls = timed
    s = fake_search(calls)
    run = s.tuned(*operands())
    for _ in range(3):
        run()
    assert timed_calls == ["a", "b", "c"]
    assert calls == ["refresh", "b"] * 3, "refresh runs inside every call; the winner runs directly"
    assert run.tile() == (ord("b"), 1)
    assert run.chosen().startswith("b, 1.000 ms; runner-up c 2.000 ms") and "(3 candidates," in run.chosen()


def test_a_shape_seen_before_is_not_searched_again(timed):
    calls, timed_calls = timed
    s = fake_search(calls)
    s.tuned(*operands())()
    s.tuned(*operands())()
    assert timed_calls == ["a", "b", "c"]
    s.tuned(*operands(M=9))()
    s.tuned(*(t.half() for t in operands()))()
    assert timed_calls == ["a", "b", "c"] * 3, "another shape and another dtype are searched afresh"


def test_the_report_names_the_best_of_every_other_family_and_the_reference(timed):
    calls, _ = timed
    s = fake_search(calls, family=lambda cand: "odd" if cand == "a" else "even", reference=("what a is worth", "a"))
    run = s.tuned(*operands())
    run()
    assert "; fastest a 3.000 ms" in run.chosen()
    s = fake_search(calls, reference=("plain", "a"))
    run = s.tuned(*operands(M=16))
    run()
    assert "runner-up c 2.000 ms; plain a 3.000 ms" in run.chosen()


@pytest.mark.parametrize("why", ["interpreter", "first"])
def test_nothing_is_timed_on_the_cpu_or_when_seeded(why, monkeypatch):
    calls = []
    monkeypatch.setenv(search.MODE_VARIABLE, "first" if why == "first" else "time")
    if why == "first":
        monkeypatch.setattr(torch.Tensor, "device", property(lambda t: torch.device("cuda", 0)))
        monkeypatch.setattr(torch.cuda, "get_device_name", lambda device: "fake GPU")
    s = fake_search(calls)
    run = s.tuned(*operands())
    run()
    assert calls == ["refresh", "a"]
    expected = "interpreter" if why == "interpreter" else f"{search.MODE_VARIABLE}=first"
    assert run.chosen() == f"a ({expected}: first candidate, untimed)"


def test_one_candidate_runs_with_its_refresh():
    calls = []
    fake_search(calls).one(*operands(), "c")()
    assert calls == ["refresh", "c"]


def test_each_binds_every_candidate_and_has_nothing_to_refresh():
    prepare = search.each(lambda a, b, c, cand: (lambda: cand * 2))
    refresh, launches = prepare(*operands(), ("x", "y"))
    assert refresh is None and {k: v() for k, v in launches.items()} == {"x": "xx", "y": "yy"}


def test_a_choice_taken_untimed_is_searched_once_timing_is_on(timed, monkeypatch):
    calls, timed_calls = timed
    s = fake_search(calls)
    monkeypatch.setattr(search, "untimed_reason", lambda device: "seeded")
    s.tuned(*operands())()
    assert timed_calls == []
    monkeypatch.setattr(search, "untimed_reason", lambda device: "")
    run = s.tuned(*operands())
    run()
    assert timed_calls == ["a", "b", "c"] and run.chosen().startswith("b, 1.000 ms")
