"""ELECTION.md from bench/election.py's results (issue 54 item 6's targets as rows)."""

from __future__ import annotations

from typing import Any

# The most a waiter's wake-up at its holder's TTL's end is spread by (core/src/timing.rs
# EXPIRY_SPREAD), and the two clocks' resolution at that end (the server expires a key by the
# millisecond, the waiter's timer fires by the millisecond): a fail-over is the TTL, these
# and one hand-off at most.
EXPIRY_SPREAD_MS = 2.0
RESOLUTION_MS = 2.0
# "Near zero": the reads 100 observers of an election that does not change may make, per second.
IDLE_READS_PER_S = 1.0


def ms(v: float | None) -> str:
    return "-" if v is None else f"{v:,.3f}"


def targets(r: dict[str, Any]) -> list[tuple[str, str, bool]]:
    h, f, i = r["handover"], r["failover"], r["idle"]
    handoff = h["resign_to_new_leader_ms"]
    bound = handoff["p99"] + EXPIRY_SPREAD_MS + RESOLUTION_MS
    led, nobody = i["leader_observed"]["reads_per_s"], i["nobody_observed"]["reads_per_s"]
    return [
        ("resign to new leader, median, one server", f"{ms(handoff['p50'])} ms (under 1 ms)",
         handoff["p50"] < 1.0),
        ("a new term to every observer, median after the term began",
         f"{ms(h['new_term_to_observers_ms']['p50'])} ms (under 1 ms)",
         h["new_term_to_observers_ms"]["p50"] < 1.0),
        ("a proclaimed value to every observer, median after the call",
         f"{ms(h['proclaim_to_observers_ms']['p50'])} ms (under 1 ms)",
         h["proclaim_to_observers_ms"]["p50"] < 1.0),
        ("fail-over after a crash: the TTL and at most one hand-off (worst time past the "
         "term's end)",
         f"{ms(f['past_the_terms_end_ms']['max'])} ms (at most {bound:.3f}: the hand-off's p99, "
         f"the {EXPIRY_SPREAD_MS:g} ms wake-up spread and {RESOLUTION_MS:g} ms of the clocks' "
         "resolution)",
         f["past_the_terms_end_ms"]["max"] <= bound),
        (f"{i['observers']} observers of an election led and extended: their reads per second",
         f"{led:.2f} (at most {IDLE_READS_PER_S:g})", led <= IDLE_READS_PER_S),
        (f"{i['observers']} observers of an election nobody leads: their reads per second",
         f"{nobody:.2f} (at most {IDLE_READS_PER_S:g})", nobody <= IDLE_READS_PER_S),
    ]


def tools_table(r: dict[str, Any]) -> list[str]:
    rows = ["| tool | stop | to the candidate, median | p99 | to the observer, median | p99 | n |",
            "|---|---|---|---|---|---|---|"]
    for name, row in r["tools"].items():
        for stop, figs in row.items():
            c, o = figs["to_candidate"], figs["to_observer"]
            how = "SIGINT (resigns)" if stop == "resign" else "SIGKILL (a crash)"
            rows.append(f"| `{name}` | {how} | {ms(c['p50'])} ms | {ms(c['p99'])} ms | "
                        f"{ms(o['p50'])} ms | {ms(o['p99'])} ms | {c['n']} |")
    return rows


def report(r: dict[str, Any]) -> str:
    h, f, i = r["handover"], r["failover"], r["idle"]
    met = targets(r)
    lines = [
        "# Leader election: hand-over, fail-over, observers",
        "",
        f"Written by `bench/election.py` ({r['mode']} run, {r['date']}; {r['redis']}"
        + (f"; {r['etcd']}" if r.get("etcd") else "; no etcd installed") + ").",
        "Figures in milliseconds; no timing is asserted, the targets are reported.",
        "",
        "## Issue 54's targets",
        "",
        "| target | measured | |",
        "|---|---|---|",
        *[f"| {what} | {got} | {'met' if ok else 'missed'} |" for what, got, ok in met],
        "",
        "## In one process (the Rust runner, each candidate and observer on its own manager)",
        "",
        f"Hand-over: {h['rounds']} resigns with a candidate waiting in line and "
        f"{h['observers']} observers following, then a proclaimed value.",
        "",
        "| from | to | median | p90 | p99 | max |",
        "|---|---|---|---|---|---|",
    ]
    for what, key in [("the resign call", "resign_to_new_leader_ms"),
                      ("the resign call", "resign_to_observers_ms"),
                      ("the new term's start", "new_term_to_observers_ms"),
                      ("the proclaim call", "proclaim_to_observers_ms")]:
        s = h[key]
        to = "the candidate leads" if key == "resign_to_new_leader_ms" else "each observer reports it"
        lines.append(f"| {what} | {to} | {ms(s['p50'])} | {ms(s['p90'])} | {ms(s['p99'])} | "
                     f"{ms(s['max'])} |")
    lines += [
        "",
        f"Fail-over: {f['rounds']} leaders (in a child process, TTL {f['ttl_ms']} ms) killed "
        "right after they began to lead, a candidate waiting and an observer following.",
        "",
        "| | median | p99 | max |",
        "|---|---|---|---|",
    ]
    for what, key in [("kill to the new leader", "kill_to_new_leader_ms"),
                      ("kill to the observer's report", "kill_to_observer_ms"),
                      ("past the term's end (its PTTL at the kill)", "past_the_terms_end_ms")]:
        s = f[key]
        lines.append(f"| {what} | {ms(s['p50'])} | {ms(s['p99'])} | {ms(s['max'])} |")
    lines += [
        "",
        f"Idle observers: {i['observers']} observers, each on its own manager, of an election "
        f"that does not change, over {i['window_ms'] / 1000:g} s each (`INFO commandstats`, "
        "scripts' commands included, the window's own `INFO` aside; an observer's read is the "
        "inspection script, the only caller of `ZCARD` here). A leader's extensions are told "
        "to its observers as renewals, which move their timers without a read.",
        "",
        "| | commands/s | observers' reads/s |",
        "|---|---|---|",
        *[f"| {what} | {i[key]['commands_per_s']:.2f} | {i[key]['reads_per_s']:.2f} |"
          for what, key in [(f"a leader (TTL {i['ttl_ms'] / 1000:g} s), nobody observing",
                             "leader_alone"),
                            (f"the same, {i['observers']} observers", "leader_observed"),
                            (f"nobody leads, {i['observers']} observers", "nobody_observed")]],
        "",
        "## Through each tool's command line, beside etcd",
        "",
        "`fencelock elect NAME --value V -- CMD` (CMD prints that it leads) and `fencelock leader "
        "NAME --watch --json`, against `etcdctl elect NAME V` and `etcdctl elect -l NAME` on a "
        "local single-member etcd: the leader's process stopped while the next candidate's "
        "waits; the time until the candidate's process prints that it leads, and until the "
        "observer's process prints it, read here as the lines come. A crash's term is 60 s for "
        "both (etcdctl's session TTL, which `etcdctl elect` has no flag for), so its figure is "
        "about 60,000 ms plus how late the tool notices; full runs only.",
        "",
        *tools_table(r),
        "",
    ]
    return "\n".join(lines)
