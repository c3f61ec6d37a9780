"""The shared search: it times every candidate once per problem, launches the winner directly after that,
reports the choice, and takes the first candidate untimed where nothing can be timed (CPU, fake timer).
Its tuning cache: a problem searched before, in any process, is not searched again; what the cache cannot
trust is searched again with a one-line warning; nothing it reads is executed."""

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch

from implementations.core import bench, search, tuning_cache


def fake_search(calls, **fields):
    """Candidates "a", "b", "c"; each launch records its name, the shared refresh records "refresh"."""
    def prepare(a, b, c, candidates):
        return (lambda: calls.append("refresh")), {cand: (lambda cand=cand: calls.append(cand)) for cand in candidates}

    return search.Search("tests.fake", "triton", ("a", "b", "c"), prepare, tile=lambda cand: (ord(cand), 1),
                         **fields)


@pytest.fixture
def timed(monkeypatch, tmp_path):
    """The search times here as on a GPU, with do_bench replaced by a table of times (ms), and its tuning
    cache in an empty directory of its own."""
    times = {"a": 3.0, "b": 1.0, "c": 2.0}
    timed_calls = []

    def do_bench(fn, warmup, rep, return_mode="mean"):
        before = len(calls)
        fn()
        name = calls[-1]
        del calls[before:]
        timed_calls.append(name)
        return times[name]

    calls = []
    monkeypatch.setattr(search, "untimed_reason", lambda device: "")
    monkeypatch.setattr("triton.testing.do_bench", do_bench)
    monkeypatch.setenv(tuning_cache.DIR_VARIABLE, str(tmp_path))
    monkeypatch.setenv(search.MODE_VARIABLE, "time")
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


def test_a_problem_is_searched_among_the_candidates_that_take_its_layout(timed):
    """A candidate that does not take a layout (`reads`) is neither bound nor timed for a problem in it, and
    still is for the layouts it takes."""
    calls, timed_calls = timed
    s = fake_search(calls, reads=lambda cand, layout: cand != "b" or layout[0] == "n")
    assert s.offered("tn") == ("a", "c") and s.offered("nt") == ("a", "b", "c")
    a, b, c = operands()
    run = s.tuned(a.T.contiguous().T, b, c)  # A a transposed view: layout tn
    run()
    assert timed_calls == ["a", "c"] and calls[-1] == "c"
    timed_calls.clear()
    s.tuned(a, b, c)()
    assert timed_calls == ["a", "b", "c"]


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
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device: (9, 0))
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


# ---- the tuning cache ---------------------------------------------------------------------------------


def cached_entries() -> list:
    return json.loads(tuning_cache.path().read_text())["entries"]


def test_a_miss_is_searched_and_saved(timed):
    calls, timed_calls = timed
    s = fake_search(calls)
    s.tuned(*operands())()
    assert timed_calls == ["a", "b", "c"]
    (entry,) = cached_entries()
    assert entry["problem"] == json.loads(s.key(*operands()))
    assert entry["best"] == "b" and entry["times_ms"] == {"a": 3.0, "b": 1.0, "c": 2.0}
    assert entry["software"] == tuning_cache.software() and entry["searched"].startswith("20")


def test_a_problem_searched_in_another_process_is_not_searched_again(timed, capsys):
    calls, timed_calls = timed
    fake_search(calls).tuned(*operands())()
    del calls[:]
    run = fake_search(calls).tuned(*operands())  # a new Search: nothing chosen in memory, as in a new process
    run()
    assert timed_calls == ["a", "b", "c"], "the second search timed nothing"
    assert calls == ["refresh", "b"]
    date = cached_entries()[0]["searched"][:10]
    assert run.chosen().startswith("b, 1.000 ms; runner-up c 2.000 ms (3 candidates, from the tuning cache: "
                                   f"searched {date} in "), run.chosen()
    assert capsys.readouterr().err == ""


def test_the_key_tells_apart_what_the_kernels_are_specialised_on():
    s = fake_search([])
    keys = {s.key(*operands()), s.key(*operands(M=9)), s.key(*(t.half() for t in operands())),
            s.key(operands()[0].t().contiguous().t(), *operands()[1:]),  # A column-major
            s.key(torch.zeros(8, 4)[:, :2], *operands()[1:]),  # A's rows 4 apart, not 2
            s.key(torch.zeros(17)[1:].view(8, 2), *operands()[1:]),  # A 4 bytes off 16-byte alignment
            s.key(*operands(), scales=torch.ones(8 + 4))}  # per-row scales (per-tensor ones keep the plain key)
    assert len(keys) == 7
    assert s.key(*operands(), scales=torch.ones(2)) == s.key(*operands())
    problem = json.loads(s.key(operands()[0].t().contiguous().t(), *operands()[1:]))
    assert problem["layout"] == "tn" and json.loads(s.key(*operands()))["layout"] == "nn"


def test_retune_searches_again_and_saves(timed, monkeypatch):
    calls, timed_calls = timed
    fake_search(calls).tuned(*operands())()
    monkeypatch.setenv(search.MODE_VARIABLE, "retune")
    monkeypatch.setattr("triton.testing.do_bench", lambda fn, warmup, rep, **_: timed_calls.append("again") or 1.0)
    fake_search(calls).tuned(*operands())()
    assert timed_calls == ["a", "b", "c", "again", "again", "again"]
    (entry,) = cached_entries()
    assert entry["best"] == "a" and entry["times_ms"] == {"a": 1.0, "b": 1.0, "c": 1.0}


def untrusted(kind: str, file, tmp_path):
    """Spoil the cache file (holding one good entry) in one way."""
    if kind == "not JSON":
        file.write_text('{"schema": 1, "entries": [')
        return
    if kind == "not UTF-8":
        file.write_bytes(b"\xff\xfe")
        return
    document = json.loads(file.read_text())
    entry = document["entries"][0]
    if kind == "another schema":
        document["schema"] += 1
    elif kind == "entries not a list":
        document["entries"] = {"0": entry}
    elif kind == "malformed entry":
        entry["times_ms"] = list(entry["times_ms"])
    elif kind == "unknown candidate":
        # a description that would leave a file behind if anything evaluated it
        evil = f"__import__('pathlib').Path({str(tmp_path / 'executed')!r}).touch()"
        entry["best"] = evil
        entry["times_ms"] = {evil: 0.5, "a": 3.0, "b": 1.0}
    elif kind == "other candidates":
        entry["times_ms"]["d"] = 5.0
    elif kind == "not the fastest":
        entry["best"] = "a"
    elif kind == "other software":
        entry["software"]["triton"] = "0.0"
    elif kind == "other kernel code":
        entry["software"]["kernel code"] = "0" * 16
    file.write_text(json.dumps(document))


@pytest.mark.parametrize("kind", ["not JSON", "not UTF-8", "another schema", "entries not a list", "malformed entry",
                                  "unknown candidate", "other candidates", "not the fastest", "other software",
                                  "other kernel code"])
def test_an_entry_that_cannot_be_trusted_is_searched_again_with_one_warning(kind, timed, tmp_path, capsys):
    calls, timed_calls = timed
    fake_search(calls).tuned(*operands())()
    untrusted(kind, tuning_cache.path(), tmp_path)
    run = fake_search(calls).tuned(*operands())
    run()
    assert timed_calls == ["a", "b", "c"] * 2
    assert run.chosen().startswith("b, 1.000 ms") and "from the tuning cache" not in run.chosen()
    warned = capsys.readouterr().err.splitlines()
    assert len(warned) == 1 and warned[0].startswith("tuning cache: "), warned
    assert not (tmp_path / "executed").exists()
    fake_search(calls).tuned(*operands())()
    assert timed_calls == ["a", "b", "c"] * 2, "the search's result replaced what could not be trusted"
    assert capsys.readouterr().err == ""
    (entry,) = cached_entries()
    assert entry["best"] == "b" and entry["software"] == tuning_cache.software()


def test_choices_taken_untimed_are_neither_saved_nor_read(timed, monkeypatch):
    calls, timed_calls = timed
    fake_search(calls).tuned(*operands())()
    saved = tuning_cache.path().read_text()
    for why in ("interpreter: first candidate, untimed", f"{search.MODE_VARIABLE}=first: first candidate, untimed"):
        monkeypatch.setattr(search, "untimed_reason", lambda device: why)
        run = fake_search(calls).tuned(*operands())
        run()
        assert run.chosen() == f"a ({why})", "the cache's choice (b) was not read"
        fake_search(calls).tuned(*operands(M=9))()
    assert timed_calls == ["a", "b", "c"] and tuning_cache.path().read_text() == saved


def test_a_failed_write_leaves_the_old_file_whole_and_no_temporary_file(timed, monkeypatch, capsys):
    calls, timed_calls = timed
    fake_search(calls).tuned(*operands())()
    saved = tuning_cache.path().read_text()

    def dump(document, out, **options):
        out.write('{"schema": 1, "entr')
        raise OSError("No space left on device")

    monkeypatch.setattr(tuning_cache.json, "dump", dump)
    run = fake_search(calls).tuned(*operands(M=9))
    run()
    assert timed_calls == ["a", "b", "c"] * 2 and run.chosen().startswith("b, 1.000 ms"), "the run goes on"
    assert capsys.readouterr().err == "tuning cache: not saved: No space left on device\n"
    assert tuning_cache.path().read_text() == saved
    assert sorted(p.name for p in tuning_cache.path().parent.iterdir()) == ["tuning.json", "tuning.json.lock"]


def test_processes_saving_at_once_lose_no_entry(tmp_path, monkeypatch):
    """Threads stand in for processes: each opens the lock file afresh, and flock locks open files."""
    monkeypatch.setenv(tuning_cache.DIR_VARIABLE, str(tmp_path))

    def save(writer):
        for i in range(15):
            tuning_cache.save(tuning_cache.Entry({"writer": writer, "i": i}, "a", {"a": 1.0}, 1.0, "2026-01-01",
                                                 tuning_cache.software()))

    writers = [threading.Thread(target=save, args=(w,)) for w in range(6)]
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    assert len(cached_entries()) == 6 * 15


def test_where_the_cache_lives(monkeypatch, tmp_path):
    monkeypatch.setenv(tuning_cache.DIR_VARIABLE, str(tmp_path / "mine"))
    assert tuning_cache.path() == tmp_path / "mine" / "tuning.json"
    monkeypatch.delenv(tuning_cache.DIR_VARIABLE)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert tuning_cache.path() == tmp_path / "xdg" / "triton-vs-cuda" / "tuning.json"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert tuning_cache.path() == tmp_path / "home" / ".cache" / "triton-vs-cuda" / "tuning.json"


def test_candidates_described_alike_are_refused():
    with pytest.raises(ValueError, match="described alike"):
        search.Search("tests.fake", "cuda", ("a", "A"), search.each(None), tile=None, describe=str.lower)


def test_an_unknown_mode_is_refused(monkeypatch):
    monkeypatch.setenv(search.MODE_VARIABLE, "fastest")
    with pytest.raises(ValueError, match="expected one of time, retune, first"):
        search.mode()


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU the script times every tuned rung (minutes)")
def test_first_call_says_in_one_line_that_it_needs_a_gpu():
    script = Path(__file__).resolve().parents[2] / "scripts" / "first_call.py"
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == ["first_call.py needs a CUDA device: it times the tuned rungs' searches on a GPU"]


def table_timer(calls, table, timed=None):
    """A fake timer: runs the call and returns its candidate's time from `table`, leaving `calls` as it was
    (and the candidate's name appended to `timed`)."""
    def time(fn, *args, **kwargs):
        before = len(calls)
        fn()
        name = calls[-1]
        del calls[before:]
        if timed is not None:
            timed.append(name)
        return table[name]

    return time


def test_short_candidates_that_tie_are_decided_in_a_graph(timed, monkeypatch):
    """Event-timed calls this short are mostly launch: among the candidates that tie with the fastest (within
    TIE), the one whose kernel is fastest in a CUDA graph wins; one clearly slower with events ("c": cold
    operands, say) is not timed again. The report and the tuning cache keep both kinds of times."""
    calls, _ = timed
    events = {"a": 0.0100, "b": 0.0104, "c": 0.030}  # "a" ahead by launch jitter
    graph = {"a": 0.006, "b": 0.004, "c": 0.001}  # "c" would win a warm graph, but is out of the tie
    graphed = []
    monkeypatch.setattr("triton.testing.do_bench", table_timer(calls, events))
    monkeypatch.setattr("triton.testing.do_bench_cudagraph", table_timer(calls, graph, graphed))
    s = fake_search(calls)
    s.tuned(*operands())()
    report = s.report(next(iter(s.choices.values())))
    assert calls == ["refresh", "b"] and sorted(graphed) == ["a", "b"], (calls, graphed)
    assert report.startswith("b, 0.010 ms (0.004 in a graph); runner-up a 0.010 ms (0.006 in a graph)"), report
    assert "2 within 1.1x decided in a CUDA graph" in report
    [entry] = json.loads(tuning_cache.path().read_text())["entries"]
    assert entry["best"] == "b" and set(entry["graph_ms"]) == {"a", "b"} and len(entry["times_ms"]) == 3
    s.choices.clear()  # as in a new process: the cache gives the same choice, its graph times with it
    monkeypatch.setattr(search, "time_candidates", lambda runs: pytest.fail("searched again"))
    s.tuned(*operands())()
    again = s.report(next(iter(s.choices.values())))
    head = "decided in a CUDA graph, "
    assert again.split(head)[0] == report.split(head)[0] and "from the tuning cache" in again.split(head)[1], again


def test_a_candidate_a_graph_cannot_capture_leaves_the_events_times(timed, monkeypatch):
    calls, _ = timed
    monkeypatch.setattr("triton.testing.do_bench", table_timer(calls, {"a": 0.0103, "b": 0.0100, "c": 0.02}))

    def refuse(fn, rep):
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr("triton.testing.do_bench_cudagraph", refuse)
    s = fake_search(calls)
    s.tuned(*operands())()
    report = s.report(next(iter(s.choices.values())))
    assert calls == ["refresh", "b"] and report.startswith("b, 0.010 ms; ") and "graph" not in report


def test_for_a_graph_replayed_benchmark_every_candidate_is_timed_in_a_graph_and_kept_apart(timed, monkeypatch):
    """compare.py --timing graph: the candidates are timed as the benchmark will time them (warm L2, no
    launch), and that choice gets a key of its own: the events choice for the same shape is another."""
    calls, _ = timed
    monkeypatch.setattr("triton.testing.do_bench_cudagraph", table_timer(calls, {"a": 0.5, "b": 0.9, "c": 0.7}))
    monkeypatch.setenv(search.TIMING_VARIABLE, "graph")
    s = fake_search(calls)
    s.tuned(*operands())()
    report = s.report(next(iter(s.choices.values())))
    assert calls == ["refresh", "a"] and "timed in CUDA graphs" in report, report
    monkeypatch.delenv(search.TIMING_VARIABLE)
    s.tuned(*operands())()  # events: "b" (do_bench's table), a search of its own
    [graph_entry, events_entry] = json.loads(tuning_cache.path().read_text())["entries"]
    assert graph_entry["problem"]["timing"] == "graph" and graph_entry["best"] == "a"
    assert "timing" not in events_entry["problem"] and events_entry["best"] == "b"


def test_the_kernel_code_digest_changes_with_a_kernel_and_only_with_one(monkeypatch, tmp_path):
    """An edited .cu, .cuh or rung module makes every cached choice stale; another file beside them does not."""
    from implementations import core
    from implementations.core import cuda_c

    kernels, package = tmp_path / "kernels_cuda", tmp_path / "implementations"
    kernels.mkdir()
    (package / "core").mkdir(parents=True)
    for f in cuda_c.KERNEL_DIR.iterdir():
        if f.suffix in (".cu", ".cuh"):
            (kernels / f.name).write_bytes(f.read_bytes())
    for f in list(core.PACKAGE_DIR.glob("v*.py")) + [core.PACKAGE_DIR / "core" / "triton_util.py"]:
        (package / f.relative_to(core.PACKAGE_DIR)).write_bytes(f.read_bytes())
    monkeypatch.setattr(cuda_c, "KERNEL_DIR", kernels)
    monkeypatch.setattr(core, "PACKAGE_DIR", package)
    first = tuning_cache.kernel_code()
    assert first == tuning_cache.kernel_code()
    (kernels / "notes.txt").write_text("not a kernel")
    (package / "core" / "cli.py").write_text("# not a kernel either")
    assert tuning_cache.kernel_code() == first
    for edited in (kernels / "v16_wgmma_tf32.cu", kernels / "hopper.cuh", package / "v15_warp_specialized.py"):
        original = edited.read_bytes()
        edited.write_bytes(original + b"\n// edited\n")
        assert tuning_cache.kernel_code() != first, edited.name
        edited.write_bytes(original)
    assert tuning_cache.kernel_code() == first


def test_with_a_clean_flush_the_candidates_are_timed_so_and_the_choice_kept_apart(timed, monkeypatch):
    """compare.py --flush clean: the searches flush the L2 as the benchmark does, and that choice has a key of
    its own, beside the one made with do_bench's own flush."""
    calls, _ = timed
    flushes = []

    def events_ms(fn, warmup, rep, flush="zero", return_mode="mean"):
        flushes.append(flush)
        return table_timer(calls, {"a": 0.5, "b": 0.9, "c": 0.7} if flush == "clean" else
                           {"a": 0.9, "b": 0.5, "c": 0.7})(fn)

    monkeypatch.setattr(bench, "events_ms", events_ms)
    monkeypatch.setenv(search.FLUSH_VARIABLE, "clean")
    s = fake_search(calls)
    s.tuned(*operands())()
    assert set(flushes) == {"clean"} and calls == ["refresh", "a"], (flushes, calls)
    monkeypatch.delenv(search.FLUSH_VARIABLE)
    s.tuned(*operands())()
    [clean_entry, zero_entry] = json.loads(tuning_cache.path().read_text())["entries"]
    assert clean_entry["problem"]["flush"] == "clean" and clean_entry["best"] == "a"
    assert "flush" not in zero_entry["problem"] and zero_entry["best"] == "b"
