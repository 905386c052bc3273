"""W1 of ../shared/bench/WORKLOAD.md with trialrun's reference agent and ScriptedModel.

Case i: prompt "lookup key-i"; the scripted model first asks for lookup(key="key-i"), then answers
"The value is value-i."; the tool returns "value-i". Graders: the output contains "value-i" and lookup was called
with key == "key-i". 5 trials per case, through the real agent loop over HTTP (httpx) in the chat-completions
wire format. Also W2: every model call waits 50 ms (asyncio), at the default concurrency and at 50.

    python bench/agent.py [--cases 200] [--trials 5] [--big 2000] [--w2] [--artefacts]

Prints wall time of the evaluate call, time per trial, and peak RSS of the process; and the FLOOR: a bare loop
doing the same round trips by hand (the same request bodies posted through `httpx.Client` to an
`httpx.MockTransport` that answers the same Chat Completions JSON, the same tool run, the same two checks), with
the trialrun/floor ratio. The two are interleaved `--repeat` times (the machine is shared and noisy) and the
medians are quoted, with the median of the pairwise ratios. W1 is timed three ways: a sync `invoke` calling
`Agent.run` (its timed tool on a companion thread), an async `invoke` awaiting `Agent.arun`, and a sync `invoke`
whose agent has `tool_timeout_s=None` (the tool inline: what the time limit's thread costs). `--artefacts` also times
writing the W1 run's artefacts (result file, HTML, JUnit, Markdown, the terminal table), where secrets are scrubbed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import time

import httpx

import trialrun as tr
from trialrun import expect


@tr.tool
def lookup(key: str) -> str:
    """Look up a key."""
    return "value-" + key.removeprefix("key-")


def _script(i: int, delay: float) -> object:
    def step(request: tr.wire.ModelRequest) -> tr.wire.Step:
        if request.last_tool_results:
            return tr.reply(f"The value is value-{i}.")
        return tr.tool_call("lookup", key=f"key-{i}")

    if not delay:
        return step

    async def slow(request: tr.wire.ModelRequest) -> tr.wire.Step:
        await asyncio.sleep(delay)
        return step(request)

    return slow


def make_cases(n: int, delay: float = 0.0, *, asynchronous: bool = False, untimed: bool = False) -> list[tr.Case]:
    """W1's cases. `asynchronous`: the same agent through `await Agent.arun` (as W2 always is) instead of a sync
    `invoke` calling `Agent.run`, which the runner must put on a worker thread (and its timed tool on another).
    `untimed`: the agent has `tool_timeout_s=None`, so its sync tool runs inline on the invoke's thread (no time
    limit, no companion thread): the difference to the default is what the time limit's thread costs."""
    timeout = {"tool_timeout_s": None} if untimed else {}

    def invoke_for(i: int):
        if delay or asynchronous:
            async def ainvoke(ctx: tr.TrialContext) -> tr.Run:
                agent = tr.Agent(ctx.scripted(_script(i, delay)), tools=[lookup], **timeout)
                return await agent.arun(f"lookup key-{i}")

            return ainvoke

        def invoke(ctx: tr.TrialContext) -> tr.Run:
            return tr.Agent(ctx.scripted(_script(i, 0.0)), tools=[lookup], **timeout).run(f"lookup key-{i}")

        return invoke

    return [
        tr.Case(
            name=f"lookup-{i}",
            invoke=invoke_for(i),
            expect_outcome=[expect.contains(f"value-{i}")],
            expect_trajectory=[expect.called("lookup", args={"key": f"key-{i}"})],
        )
        for i in range(n)
    ]


# -- the floor: the same round trips, by hand -----------------------------------------------------------------
_TOOLS = [{"type": "function", "function": {"name": "lookup", "description": "Look up a key.", "parameters": {
    "type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}}}]


def _floor_handler(request: httpx.Request) -> httpx.Response:
    body = json.loads(request.content)
    last = body["messages"][-1]
    if last["role"] == "tool":
        i = last["content"].removeprefix("value-")
        message = {"role": "assistant", "content": f"The value is value-{i}."}
        finish = "stop"
    else:
        key = last["content"].removeprefix("lookup ")
        message = {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
                   "function": {"name": "lookup", "arguments": json.dumps({"key": key})}}]}
        finish = "tool_calls"
    return httpx.Response(200, json={
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})


def floor(n: int, trials: int) -> tuple[float, float]:
    """W1 by hand: per trial, post, run the tool, post again, check the text and the call. (wall, CPU) seconds."""
    started, cpu = time.perf_counter(), time.process_time()
    with httpx.Client(transport=httpx.MockTransport(_floor_handler), base_url="https://api.openai.com/v1") as client:
        for i in range(n):
            for _ in range(trials):
                messages: list[dict[str, object]] = [{"role": "user", "content": f"lookup key-{i}"}]
                calls = []
                while True:
                    data = client.post("/chat/completions", json={"model": "gpt-4.1-mini", "messages": messages,
                                                                   "tools": _TOOLS}).json()
                    message = data["choices"][0]["message"]
                    if not message.get("tool_calls"):
                        break
                    messages.append(message)
                    for call in message["tool_calls"]:
                        arguments = json.loads(call["function"]["arguments"])
                        calls.append((call["function"]["name"], arguments))
                        messages.append({"role": "tool", "tool_call_id": call["id"], "content": lookup(**arguments)})
                assert f"value-{i}" in message["content"] and ("lookup", {"key": f"key-{i}"}) in calls
    return time.perf_counter() - started, time.process_time() - cpu


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def artefacts(report: tr.RunReport, repeat: int = 7) -> None:
    """Time each writer on the report, with the scrubber and with its search switched off, interleaved (best of
    `repeat` each, so a noisy machine hits both alike): the ratio is what scrubbing at serialisation costs."""
    import io
    import tempfile
    from pathlib import Path

    from rich.console import Console

    from trialrun._scrub import replace as _replace
    from trialrun.render.html import report_html
    from trialrun.render.junit import junit_xml
    from trialrun.render.markdown import report_markdown
    from trialrun.render.terminal import print_report
    from trialrun.report.store import ResultsStore

    search = _replace._spans
    with tempfile.TemporaryDirectory() as folder:
        writers = {
            "result file": lambda: ResultsStore(Path(folder) / f"r{time.perf_counter_ns()}").save(report),
            "HTML": lambda: report_html(report),
            "JUnit": lambda: junit_xml(report),
            "Markdown": lambda: report_markdown(report),
            "terminal": lambda: print_report(report, Console(file=io.StringIO(), width=120)),
        }
        totals = [0.0, 0.0]
        for name, write in writers.items():
            best = [float("inf"), float("inf")]
            for _ in range(repeat):
                for index, scrubbing in enumerate((True, False)):
                    _replace._spans = search if scrubbing else (lambda text, extra=(): [])
                    started = time.perf_counter()
                    write()
                    best[index] = min(best[index], time.perf_counter() - started)
            _replace._spans = search
            totals = [totals[0] + best[0], totals[1] + best[1]]
            print(f"{'  artefact: ' + name:<34} {best[0] * 1e3:8.1f} ms scrubbed, {best[1] * 1e3:8.1f} ms not "
                  f"({best[0] / best[1]:.2f}x)")
        print(f"{'  artefacts, all':<34} {totals[0] * 1e3:8.1f} ms scrubbed, {totals[1] * 1e3:8.1f} ms not "
              f"({totals[0] / totals[1]:.2f}x)")


def run(label: str, cases: list[tr.Case], trials: int, quiet: bool = False, write: bool = False, **kwargs: object) -> tuple[float, float]:
    """One evaluate call: (wall, CPU) seconds. CPU (all threads) is steadier than wall time on a loaded machine."""
    started, cpu = time.perf_counter(), time.process_time()
    report = tr.evaluate(cases, trials=trials, **kwargs)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    total = len(cases) * trials
    assert report.passed_case_count == len(cases), [c.trials[0].failed_verdicts for c in report.failed_cases][:2]
    if quiet:
        return elapsed, cpu
    print(
        f"{label:<34} {total:>6} trials  {elapsed:7.2f} s  {elapsed / total * 1e3:6.3f} ms/trial  "
        f"pass@1 {report.pass_at_1:.2f} pass^k {report.pass_pow_k:.2f}  peak RSS {peak_rss_mib():6.0f} MiB"
    )
    if write:
        artefacts(report)
    return elapsed, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--big", type=int, default=2000, help="cases in the large W1 run (0 to skip)")
    parser.add_argument("--w2", action="store_true", help="also run W2 (50 ms per model call)")
    parser.add_argument("--artefacts", action="store_true", help="also time writing the W1 run's artefacts")
    parser.add_argument("--repeat", type=int, default=5, help="interleaved W1 / floor pairs (medians quoted)")
    args = parser.parse_args()
    run("warm-up", make_cases(20), 1)
    floor(20, 1)
    cases = make_cases(args.cases)
    total = args.cases * args.trials
    ours: list[tuple[float, float]] = []
    floors: list[tuple[float, float]] = []
    async_cases = make_cases(args.cases, asynchronous=True)
    run("", async_cases, 1, quiet=True)
    ours_async: list[tuple[float, float]] = []
    untimed_cases = make_cases(args.cases, untimed=True)
    run("", untimed_cases, 1, quiet=True)
    ours_untimed: list[tuple[float, float]] = []
    for _ in range(args.repeat):
        ours.append(run("", cases, args.trials, quiet=True))
        floors.append(floor(args.cases, args.trials))
        ours_async.append(run("", async_cases, args.trials, quiet=True))
        ours_untimed.append(run("", untimed_cases, args.trials, quiet=True))
    run(f"W1 {args.cases} x {args.trials}", cases, args.trials, write=args.artefacts)
    for style, measured in (("sync invoke, Agent.run", ours), ("async invoke, Agent.arun", ours_async),
                            ("sync invoke, tool_timeout_s=None", ours_untimed)):
        print(f"W1 with a {style}:")
        for what, index in (("wall", 0), ("CPU", 1)):
            mine = statistics.median(o[index] for o in measured)
            bare = statistics.median(f[index] for f in floors)
            ratios = [o[index] / f[index] for o, f in zip(measured, floors)]
            print(f"  W1 {what:<4} trialrun {mine / total * 1e3:6.3f} ms/trial, floor {bare / total * 1e3:6.3f} ms/trial; "
                  f"trialrun/floor median {statistics.median(ratios):.2f}x (pairs: {', '.join(f'{r:.2f}' for r in ratios)})")
    if args.big:
        run(f"W1 {args.big} x {args.trials}", make_cases(args.big), args.trials)
    if args.w2:
        ideal = 2 * args.cases * args.trials * 0.05
        slow = make_cases(args.cases, 0.05)
        for concurrency in (tr.run.runner.DEFAULT_CONCURRENCY, 50):
            runs = [run("", slow, args.trials, quiet=True, concurrency=concurrency) for _ in range(max(1, args.repeat // 2))]
            times = [wall for wall, _ in runs]
            elapsed = statistics.median(times)
            print(f"{f'W2 {args.cases} x {args.trials} @ {concurrency}, median':<34} {total:>6} trials  {elapsed:7.2f} s  "
                  f"ideal {ideal / concurrency:.2f} s, measured/ideal {elapsed / (ideal / concurrency):.2f}  "
                  f"(runs: {', '.join(f'{t:.2f}' for t in times)}; CPU {statistics.median(c for _, c in runs) / total * 1e3:.3f} ms/trial)")


if __name__ == "__main__":
    main()
