"""The runner's schedule, with a stand-in implementation (no Spark): rounds of a
window per kind, so a costly kind never starves the kinds after it, and the
oracle in processes of its own giving what it gives in the main thread."""

import time

import oracle
from difftest.runner import Runner, targets


class _Stand:
    """An implementation under test that posts the oracle's own updates, slowly
    for the windows `slow` names: what the runner schedules, not what it checks."""

    name = "stand-in"

    def __init__(self, slow: str = "", seconds: float = 0.0, wrong: str = ""):
        self.slow, self.seconds, self.wrong, self.windows = slow, seconds, wrong, []

    def unsupported(self, spec):
        return None

    def run(self, spec, window, dialect, batch):
        self.windows.append(window)
        if self.slow and window.startswith(self.slow):
            time.sleep(self.seconds)
        out = {tid: oracle.run(spec, trace) for tid, trace in batch}
        if self.wrong and window.startswith(self.wrong):
            out = {tid: updates[:-1] for tid, updates in out.items()}
        return out


class _Unshrunk(Runner):
    """Counts a disagreement without shrinking it (shrinking reads Spark's frames)."""

    def _record(self, stats, result):
        stats.mismatches += 1


def _kinds():
    return [t for t in targets("esper", None, ["length", "time", "firstlength", "length_batch"])]


def test_a_costly_kind_delays_every_kind_alike():
    """The first kind is slow: over a budget it spends most of, every kind still
    gets as many windows as it, give or take the round the budget ends in."""
    stand = _Stand(slow="#length(", seconds=0.4)
    run = Runner(stand, seed=5, batch_size=20, in_flight=1)
    stats = run.run(_kinds(), examples=400, budget=2.0)
    batches = [s.batches for s in stats]
    assert batches[0] >= 2 and max(batches) - min(batches) <= 1, batches
    assert all(s.mismatches == 0 and s.cases == 20 * s.batches for s in stats)
    assert [w.split("(")[0] for w in stand.windows[:4]] == ["#length", "#time", "#firstlength", "#length_batch"]


def test_without_a_budget_each_kind_draws_what_it_is_asked_over_four_windows():
    stats = Runner(_Stand(), seed=6, batch_size=1000).run(_kinds(), examples=80, budget=None)
    assert [(s.cases, s.batches) for s in stats] == [(80, 4)] * 4


def test_the_oracle_in_processes_of_its_own_judges_as_in_the_main_thread():
    """Same seed, same draws: the oracle in a process pool gives the same
    updates, and a wrong implementation is still caught there."""
    here = Runner(_Stand(), seed=7, batch_size=1000).run(_kinds()[:2], examples=40, budget=None)
    pooled = Runner(_Stand(), seed=7, batch_size=1000, oracle_processes=2).run(_kinds()[:2], examples=40, budget=None)
    assert [(s.cases, s.updates, s.windows) for s in here] == [(s.cases, s.updates, s.windows) for s in pooled]
    assert all(s.updates > 0 and s.mismatches == 0 for s in pooled)
    wrong = _Unshrunk(_Stand(wrong="#time("), seed=7, batch_size=1000, oracle_processes=1)
    stats = wrong.run(_kinds()[:2], examples=40, budget=None)
    assert [s.mismatches for s in stats] == [0, 1]


def test_the_steady_rate_leaves_out_every_batch_of_the_first_job():
    """The first job pays Spark's warm-up: its batches, judged at one instant, are left out of the steady
    rate (traces judged after it over the time after it), not only its first."""
    run = Runner(impl=None, done_log=[(10.0, 500), (10.0, 500), (12.0, 400), (14.0, 600)])
    totals = run.totals()
    assert totals["traces_per_second"] == 250.0  # (400 + 600) traces over 4 s


def test_a_job_runs_several_windows_of_any_kinds_and_judges_each_as_its_own():
    stand = _Stand(wrong="#time(")
    run = _Unshrunk(stand, seed=8, batch_size=1000, windows_per_job=3)
    stats = run.run(_kinds(), examples=40, budget=None)
    assert [s.batches for s in stats] == [2, 1, 2, 2]  # the wrong kind stops after its first batch
    assert [s.mismatches for s in stats] == [0, 1, 0, 0] and all(s.cases == 20 * s.batches for s in stats)


def test_a_run_collects_cycles_rarely_and_restores_the_collector():
    import gc

    from difftest.runner import fewer_collections

    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    with fewer_collections(young=12_345):
        assert gc.get_threshold()[0] == 12_345 and gc.get_freeze_count() > frozen
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen
    try:
        with fewer_collections():
            raise RuntimeError("a run that fails")
    except RuntimeError:
        pass
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen
