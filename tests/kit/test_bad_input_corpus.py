"""The bad-input corpus: every case is a real `locust -f locustfile.py --headless ...` command line
(options, LOCUST_* variables, a config file, threshold/price/spec files, run directories) that must end
with exit code 2, exactly one line on stderr besides Locust's start banner, no traceback, no run
directory left behind and no request sent to the gateway.

All command lines run in one batch (tests/forked_locust.py forks Locust's own main() per case) so that
Locust is imported once; each case is then asserted on its own.
"""

from __future__ import annotations

import http.server
import json
import re
import subprocess
import sys
import threading
from dataclasses import dataclass, field

import pytest

from contract import exit_codes
from tests.locust_runs import REPO

HEALTH = "/health"
BANNER = re.compile(r"^\[[^\]]+\] \S+/INFO/locust\.main: Starting Locust \S+$")
NOT_UTF8 = b"\xff\xfe bad bytes \x80\n"


@dataclass(frozen=True)
class Case:
    """A command line (after `locust -f locustfile.py --headless`), its environment and files."""

    name: str
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)  # written into the case's directory first
    host: bool = True  # point --host at the counting gateway
    run_dir: bool = True  # pass --run-dir (else the run goes to ./runs/<id> of the case's directory)


def numbers(flag: str, values: tuple[str, ...]) -> list[Case]:
    return [Case(f"{flag}={v}", (flag, v)) for v in values]


def spec(create: str) -> dict[str, bytes]:
    """A spec file whose [create] has these extra lines (and a path unless they give one)."""
    path = "" if "path" in create else 'path = "/v1/tasks"\n'
    poll = '[poll]\npath = "/v1/tasks/{id}"\nstatus = "status"\nterminal = { done = ["done"] }\n'
    return {"s.toml": f'[create]\nid = "id"\n{path}{create}\n{poll}'.encode()}


SESSION = (
    b'{"format": "loadkit-sessions/1"}\n{"session": "s", "offset_s": 0, "step": 0, "api": "chat", '
    b'"request": {"messages": [{"role": "user", "content": "hi"}]}}\n'
)
TEN_THOUSAND_THRESHOLDS = b'[[threshold]]\nexpr = "latency_ms p95 < 500"\n' * 10_000
POSITIVE_FLOAT_BAD = ("abc", "-1", "0", "inf", "nan", "-inf")
USERS_BAD = ("abc", "-1", "0", "1.5", "99999")
CASES: list[Case] = [
    # --- kit options on the command line --------------------------------------------------------------
    *[
        c
        for flag in (
            "--start-timeout",
            "--sample-interval",
            "--request-timeout",
            "--poll-interval",
            "--task-timeout",
            "--host-price",
        )
        for c in numbers(flag, POSITIVE_FLOAT_BAD)
    ],
    *numbers("--max-tokens", ("abc", "-1", "0", "1.5")),
    *numbers("--pss-every", ("abc", "-1", "1.5")),
    *numbers("--target-pid", ("abc", "-1", "0")),
    *numbers("--sidecar-pid", ("abc", "-1", "0")),
    *numbers("--runs-follow", ("sometimes",)),
    *numbers("--a2a-version", ("2.0",)),
    *numbers("--capacity-metric", ("vss",)),
    *numbers("--langgraph-input", ("{oops", "[1, 2]", "42")),
    # --- profile and threshold options -----------------------------------------------------------------
    *numbers("--load-profile", ("nope",)),
    *numbers("--peak-users", USERS_BAD),
    *numbers("--base-users", ("abc", "-1", "99999")),
    *numbers("--spike-users", ("abc", "-1", "0", "99999")),
    *numbers("--step-users", ("abc", "-1", "0", "99999")),
    *numbers("--max-agents", ("abc", "-1", "0", "99999")),
    *numbers("--ramp", ("abc", "-1s", "5 parsecs")),
    *numbers("--hold", ("abc", "-1s", "1 fortnight")),
    *numbers("--settle", ("abc", "-1s")),
    *numbers("--step-every", ("0s", "abc")),
    *numbers("--duration", ("0s", "abc", "-5s", "inf", "3 parsecs")),
    *numbers("--baseline", ("abc", "-1s")),
    *numbers("--rounds", ("abc", "2,,3", "0", "2,-1", "99999")),
    *numbers("--round-hold", ("0s", "abc")),
    *numbers("--arrival-rate", ("abc", "-1", "0", "inf", "nan")),
    *numbers("--stages", ("abc", "30s", "30s:abc", "x:5", "30s:-4", "1s:1000000,2s:0", "1s:10001")),
    *numbers("--duration", ("999999999h", "721h", "9" * 400)),
    *numbers("--hold", ("999999999h",)),
    *numbers("--threshold", ("ttft_ms p95 < 5 grace=999999999h",)),
    Case("-t 999999999h", ("--load-profile", "manual", "-u", "1", "-t", "999999999h")),
    Case("stages open model pool", ("--stages", "1s:20000", "--arrival-rate", "1")),
    Case("10,000 thresholds", ("--thresholds", "t.toml"), files={"t.toml": TEN_THOUSAND_THRESHOLDS}),
    Case("spec over 4 MiB", ("--gateway", "spec:s.toml"), files={"s.toml": b"#" * (4 * 1024 * 1024 + 1)}),
    *numbers("--threshold", ("nope", "ttft_ms p95 <", "ttft_ms p95 < abc", "no_such_metric p95 < 5")),
    Case("-u -5", ("--load-profile", "manual", "-u", "-5")),
    Case("-u 0", ("--load-profile", "manual", "-u", "0")),
    Case("-u 99999", ("--load-profile", "manual", "-u", "99999")),
    Case("-r 0", ("--load-profile", "manual", "-u", "2", "-r", "0")),
    Case("-r -1", ("--load-profile", "manual", "-u", "2", "-r", "-1")),
    Case("-r inf", ("--load-profile", "manual", "-u", "2", "-r", "inf")),
    Case("arrival-rate with rounds", ("--load-profile", "rounds", "--rounds", "2", "--arrival-rate", "1")),
    # --- arrivals, the sweep, service levels -----------------------------------------------------------
    *numbers("--arrivals", ("bursty",)),
    *numbers("--burstiness", ("abc", "0", "-1", "inf", "nan")),
    *numbers("--arrival-seed", ("abc", "-1", "1.5")),
    *numbers("--sweep-rates", ("abc", "0", "-1")),
    *numbers("--slo", ("ttft_ms", "ttft_ms <= fast", "error_rate < 0.1", "ttft_ms p0 <= 4")),
    Case("burstiness with poisson", ("--arrivals", "poisson", "--burstiness", "0.5")),
    Case("goodput without slo", ("--threshold", "goodput >= 0.9")),
    Case("arrival-rate with sweep", ("--load-profile", "sweep", "--arrival-rate", "5")),
    Case("sweep with stages", ("--load-profile", "sweep", "--stages", "10s:1")),
    Case("breakpoint with duration", ("--load-profile", "breakpoint", "--duration", "5m")),
    Case("smoke with run time", ("--load-profile", "smoke", "-t", "60s")),
    Case("manual with arrivals", ("--load-profile", "manual", "-u", "2", "--arrivals", "poisson")),
    # --- capacity and churn ----------------------------------------------------------------------------
    *numbers("--memory-budget", ("banana", "0", "-1GiB", "1ZiB", "1 GiB of RAM")),
    *numbers("--capacity-at-n", ("abc", "0", "-1")),
    *numbers("--churn-cycles", ("abc", "0", "-1")),
    *numbers("--churn-batch", ("abc", "0", "-1")),
    # --- run id and run directory ----------------------------------------------------------------------
    *[
        Case(f"--run-id={v}", ("--run-id", v), run_dir=False)
        for v in ("..", "a/b", "../x", ".hidden", "a b", "x" * 101, "é", "-dash", "a..b", "a\\b")
    ],
    Case("run dir not empty", ("--run-dir", "full"), files={"full/old.csv": b"a,b\n1,2\n"}, run_dir=False),
    Case("run dir is a file", ("--run-dir", "afile"), files={"afile": b"x"}, run_dir=False),
    Case("run dir under a file", ("--run-dir", "afile/sub"), files={"afile": b"x"}, run_dir=False),
    Case("run dir under /proc", ("--run-dir", "/proc/loadkit-hostile/run"), run_dir=False),
    Case("openclaw upper-case run id", ("--gateway", "openclaw", "--run-id", "Nightly-1"), run_dir=False),
    # --- target ----------------------------------------------------------------------------------------
    *[
        Case(f"--host={v}", ("--host", v), host=False)
        for v in (
            "ftp://127.0.0.1",
            "localhost:8000",
            "http://",
            "not a url",
            "file:///etc/passwd",
            "http://127.0.0.1:8000\n",
            "http://127.0.0.1:80\t00",
            "http://127.0.0.1:99999",
            "http://[::1",
        )
    ],
    Case("--host nothing answers", ("--host", "http://127.0.0.1:9"), host=False),
    Case("--target-cmd unbalanced", ("--target-cmd", '"unbalanced {port}'), host=False),
    Case("--target-cmd apostrophe", ("--target-cmd", "it's {port}"), host=False),
    Case("--target-cmd exits", ("--target-cmd", "false"), host=False),
    Case("--sim-args unbalanced", ("--sim-args", "--ttft-ms '3"), host=False),
    Case("--sim-args unknown", ("--sim-args", "--ttft-ms banana"), host=False),
    Case("--acp-command unbalanced", ("--gateway", "acp", "--acp-command", '"agent'), host=False),
    Case("acp without command", ("--gateway", "acp"), host=False),
    Case("kanban CLI not found", ("--gateway", "hermes-kanban", "--hermes-command", "loadkit-no-hermes")),
    Case(
        "HermesKanbanAgent named, CLI not found",
        ("HermesKanbanAgent", "--hermes-command", "loadkit-no-hermes"),
    ),
    Case("litellm without host", ("--gateway", "litellm"), host=False),
    *numbers("--gateway", ("nope", "spec:", "spec:missing.toml")),
    # --- files -----------------------------------------------------------------------------------------
    Case("thresholds missing", ("--thresholds", "missing.toml")),
    Case("thresholds not utf-8", ("--thresholds", "t.toml"), files={"t.toml": NOT_UTF8}),
    Case("thresholds bad toml", ("--thresholds", "t.toml"), files={"t.toml": b"[[threshold]\n"}),
    Case("thresholds wrong type", ("--thresholds", "t.toml"), files={"t.toml": b"threshold = 5\n"}),
    Case("thresholds entry not a table", ("--thresholds", "t.toml"), files={"t.toml": b"threshold = [1]\n"}),
    Case("thresholds unknown key", ("--thresholds", "t.toml"), files={"t.toml": b"[[threshold]]\nx = 1\n"}),
    Case(
        "thresholds abort text",
        ("--thresholds", "t.toml"),
        files={"t.toml": b'[[threshold]]\nexpr = "ttft_ms p95 < 5"\nabort = "yes"\n'},
    ),
    Case(
        "thresholds expr number", ("--thresholds", "t.toml"), files={"t.toml": b"[[threshold]]\nexpr = 5\n"}
    ),
    Case("prices missing", ("--prices", "missing.toml")),
    Case("prices not utf-8", ("--prices", "p.toml"), files={"p.toml": NOT_UTF8}),
    Case("prices bad toml", ("--prices", "p.toml"), files={"p.toml": b"[models\n"}),
    Case("prices no models", ("--prices", "p.toml"), files={"p.toml": b"currency = 'USD'\n"}),
    Case(
        "prices text price",
        ("--prices", "p.toml"),
        files={"p.toml": b'[models."m"]\ninput = "cheap"\noutput = 1.0\n'},
    ),
    Case(
        "prices negative",
        ("--prices", "p.toml"),
        files={"p.toml": b'[models."m"]\ninput = -1.0\noutput = 1.0\n'},
    ),
    Case("spec not utf-8", ("--gateway", "spec:s.toml"), files={"s.toml": NOT_UTF8}),
    Case("spec bad toml", ("--gateway", "spec:s.toml"), files={"s.toml": b"[create\n"}),
    Case("spec unknown section", ("--gateway", "spec:s.toml"), files={"s.toml": b"[nope]\n"}),
    Case("spec name not text", ("--gateway", "spec:s.toml"), files={"s.toml": b"name = 5\n"}),
    Case("spec headers not a table", ("--gateway", "spec:s.toml"), files=spec('headers = "x"')),
    Case("spec path not a path", ("--gateway", "spec:s.toml"), files=spec('path = "v1/tasks"')),
    Case("spec path a URL", ("--gateway", "spec:s.toml"), files=spec('path = "http://169.254.169.254/x"')),
    Case("spec path //host", ("--gateway", "spec:s.toml"), files=spec('path = "//169.254.169.254/x"')),
    # --- workload options and files (docs/workloads.md) ----------------------------------------------
    *numbers("--input-tokens", ("abc", "-5", "inf", "nan")),
    *numbers("--output-tokens", ("abc", "-1")),
    *numbers("--input-tokens-distribution", ("gauss",)),
    *numbers("--think-time", ("soon", "1s..", "-2s")),
    *numbers("--seed", ("abc", "-1")),
    *numbers("--trace-speed", ("2",)),  # without a trace
    Case("prefix without input", ("--prefix-tokens", "100")),
    Case("prefix above input", ("--input-tokens", "100", "--prefix-tokens", "200")),
    Case("lognormal without stdev", ("--input-tokens", "100", "--input-tokens-distribution", "lognormal")),
    Case("max-tokens and output-tokens", ("--max-tokens", "10", "--output-tokens", "20")),
    Case("--live-tools without --sessions", ("--live-tools",)),
    Case(
        "--live-tools without [tools]", ("--live-tools", "--sessions", "s.jsonl"), files={"s.jsonl": SESSION}
    ),
    Case("workload missing", ("--workload", "missing.toml")),
    Case("workload bad toml", ("--workload", "w.toml"), files={"w.toml": b"[input\n"}),
    Case("workload unknown section", ("--workload", "w.toml"), files={"w.toml": b"[inptu]\nmean = 1\n"}),
    Case("workload unknown key", ("--workload", "w.toml"), files={"w.toml": b"[input]\nmeen = 1\n"}),
    Case(
        "workload unknown distribution",
        ("--workload", "w.toml"),
        files={"w.toml": b'[input]\nmean = 9\ndistribution = "gauss"\n'},
    ),
    Case("workload negative size", ("--workload", "w.toml"), files={"w.toml": b"[output]\nmean = -4\n"}),
    # the agent loop's sections (docs/workloads.md): a bad value, a schema file that is not JSON
    Case("tools choice unknown", ("--workload", "w.toml"), files={"w.toml": b"[tools]\nchoice = 'tool_9'\n"}),
    Case("loop without tools", ("--workload", "w.toml"), files={"w.toml": b"[loop]\nmax_steps = 3\n"}),
    Case(
        "tools schema file not JSON",
        ("--workload", "w.toml"),
        files={"w.toml": b"[tools]\nfile = 't.json'\n", "t.json": b"[{"},
    ),
    Case("dataset missing", ("--dataset", "missing.jsonl")),
    Case("dataset not json", ("--dataset", "d.jsonl"), files={"d.jsonl": b'{"messages": []\n'}),
    Case("dataset not utf-8", ("--dataset", "d.jsonl"), files={"d.jsonl": NOT_UTF8}),
    Case(
        "dataset bad role",
        ("--dataset", "d.jsonl"),
        files={"d.jsonl": b'{"messages": [{"role": "robot", "content": "x"}]}\n'},
    ),
    Case(
        "trace out of order",
        ("--trace", "t.jsonl"),
        files={"t.jsonl": b'{"timestamp": 50, "input_length": 5}\n{"timestamp": 10, "input_length": 5}\n'},
    ),
    Case(
        "trace negative size",
        ("--trace", "t.jsonl"),
        files={"t.jsonl": b'{"timestamp": 0, "input_length": -5}\n'},
    ),
    Case(
        "trace with another profile",
        ("--trace", "t.jsonl", "--load-profile", "average"),
        files={"t.jsonl": b'{"timestamp": 0, "input_length": 5}\n'},
    ),
    Case("trace profile without a trace", ("--load-profile", "trace")),
    # --- ceilings (scenarios/ceilings.py): sizes that fit no model or no memory, profiles that never end --
    *numbers("--input-tokens", ("1000000000", "0")),
    *numbers("--output-tokens", ("1000000000000",)),
    *numbers("--max-tokens", ("1000000000000",)),
    Case("input mean 1e9", ("--workload", "w.toml"), files={"w.toml": b"[input]\nmean = 1000000000\n"}),
    Case("input mean 0", ("--workload", "w.toml"), files={"w.toml": b"[input]\nmean = 0\n"}),
    Case("tools count 1e6", ("--workload", "w.toml"), files={"w.toml": b"[tools]\ncount = 1000000\n"}),
    Case(
        "loop max_steps 1e9",
        ("--workload", "w.toml"),
        files={"w.toml": b"[tools]\ncount = 2\n[loop]\nmax_steps = 1000000000\n"},
    ),
    Case(
        "trace input_length 1e9",
        ("--trace", "t.jsonl"),
        files={"t.jsonl": b'{"timestamp": 0, "input_length": 1000000000}\n'},
    ),
    Case(
        "trace timestamp 1e15",
        ("--trace", "t.jsonl"),
        files={"t.jsonl": b'{"timestamp": 0, "input_length": 5}\n{"timestamp": 1e15, "input_length": 5}\n'},
    ),
    Case(
        "prompt text over memory",
        ("--input-tokens", "9000000", "--load-profile", "average", "--peak-users", "1000"),
    ),
    Case("sweep hold 0s", ("--load-profile", "sweep", "--hold", "0s")),
    Case("fit cpu limit over 100", ("--load-profile", "fit", "--cpu-limit", "150%")),
    Case("fit project without cores", ("--load-profile", "fit", "--project", "4GiB")),
    Case(
        "fit max hold under its least",
        ("--load-profile", "fit", "--step-every", "10s", "--step-max-hold", "5s"),
    ),
    Case("fit with stages", ("--load-profile", "fit", "--stages", "10s:1")),
    Case("stages 0s:0", ("--stages", "0s:0")),
    Case("-t 0s", ("--load-profile", "manual", "-u", "1", "-t", "0s")),
    Case("average ramp and hold 0s", ("--load-profile", "average", "--ramp", "0s", "--hold", "0s")),
    # --- headers, prices, run directories, service levels, the sampler and the simulator's script --------
    Case("api key with CR LF", ("--api-key-env", "K"), env={"K": "sk-1\r\nX-Evil: 1"}),
    Case(
        "spec header with NUL", ("--gateway", "spec:s.toml"), files=spec('headers = { X-Tag = "a\\u0000" }')
    ),
    Case("--session-header with CR LF", ("--session-header", "X-S\r\nX-Evil: 1")),
    Case(
        "spec header with CR LF", ("--gateway", "spec:s.toml"), files=spec('headers = { X-Tag = "a\\r\\nb" }')
    ),
    Case(
        "spec header name with a space",
        ("--gateway", "spec:s.toml"),
        files=spec('headers = { "X Tag" = "a" }'),
    ),
    Case(
        "prices 1e308",
        ("--prices", "p.toml"),
        files={
            "p.toml": b'[models."m"]\ninput = 1e308\ncached_input = 0\ncache_write = 0\noutput = 1.0\n'
            b'currency = "USD"\nas_of = "2026-01"\nsource = "x"\n'
        },
    ),
    Case(
        "--trace-speed -1",
        ("--trace", "t.jsonl", "--trace-speed", "-1"),
        files={"t.jsonl": b'{"timestamp": 0, "input_length": 5}\n'},
    ),
    *numbers("--slo", ("",)),
    *numbers("--threshold", ("",)),
    *[
        Case(f"sampler {' '.join(args)}", args, host=False)
        for args in (
            ("--sample-interval", "0.01"),
            ("--target-match", "("),
            ("--sidecar-match", "("),
            ("--queue-url", "ftp://127.0.0.1/q", "--queue-field", "q"),
            ("--queue-url", "http://127.0.0.1:1/q"),
            ("--queue-field", "q"),
            ("--inflight-field", "q"),
        )
    ],
    Case("--sampler-url without its token", ("--sampler-url", "http://127.0.0.1:1")),
    Case(
        "--sampler-url nothing answers",
        ("--sampler-url", "http://127.0.0.1:1"),
        env={"LOADKIT_SAMPLER_TOKEN": "t"},
    ),
    Case(
        "sim script placeholder missing",
        ("--sim-args", "--script s.toml"),
        files={
            "s.toml": b"[[rule]]\noffers = 't'\nsays = 'task (?P<task>\\S+)'\n"
            b"arguments = { id = '{missing}' }\n"
        },
        host=False,
    ),
    # --- LOCUST_* variables, read like Locust's own --------------------------------------------------
    *[
        Case(f"{k}={v}", (), env={k: v})
        for k, v in (
            ("LOCUST_MEMORY_BUDGET", "banana"),
            ("LOCUST_REQUEST_TIMEOUT", "inf"),
            ("LOCUST_LOAD_PROFILE", "nope"),
            ("LOCUST_PEAK_USERS", "-1"),
            ("LOCUST_SAMPLE_INTERVAL", "0"),
            ("LOCUST_DURATION", "0s"),
            ("LOCUST_MAX_TOKENS", "-3"),
        )
    ],
    Case("LOCUST_RUN_ID=..", (), env={"LOCUST_RUN_ID": ".."}, run_dir=False),
    Case("LOCUST_HOST=ftp", (), env={"LOCUST_HOST": "ftp://127.0.0.1"}, host=False),
    Case("LOCUST_HOST newline", (), env={"LOCUST_HOST": "http://127.0.0.1:1\n"}, host=False),
    # --- a config file (locust.conf), read like Locust's own -------------------------------------------
    *[
        Case(f"conf {line}", ("--config", "k.conf"), files={"k.conf": f"{line}\n".encode()})
        for line in (
            "memory-budget = banana",
            "request-timeout = nan",
            "peak-users = 0",
            "load-profile = nope",
            "duration = 0s",
            "arrival-rate = -2",
            "start-timeout = inf",
        )
    ],
    Case("conf run-id", ("--config", "k.conf"), files={"k.conf": b"run-id = ../x\n"}, run_dir=False),
]


class CountingGateway(http.server.ThreadingHTTPServer):
    """A real HTTP server on 127.0.0.1 that answers 200 and keeps the path of every request but the health
    check; each case's --host has its own path prefix, so a request names its case."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[str] = []


class _Handler(http.server.BaseHTTPRequestHandler):
    def _answer(self) -> None:
        if not (self.command == "GET" and self.path.endswith(HEALTH)):
            self.server.requests.append(self.path)  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    do_GET = do_POST = do_DELETE = _answer

    def log_message(self, *_args) -> None:
        pass


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Run every case in one batch; per case: its result and its directory."""
    gateway = CountingGateway()
    threading.Thread(target=gateway.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{gateway.server_address[1]}"
    root = tmp_path_factory.mktemp("corpus")
    batch = []
    for i, case in enumerate(CASES):
        cwd = root / f"case-{i}"
        for name, content in case.files.items():
            (cwd / name).parent.mkdir(parents=True, exist_ok=True)
            (cwd / name).write_bytes(content)
        cwd.mkdir(exist_ok=True)
        argv = ["-f", str(REPO / "locustfile.py"), "--headless", *case.argv]
        argv += ["--host", f"{url}/case-{i}"] if case.host else []
        argv += ["--run-dir", str(cwd / "run")] if case.run_dir else []
        batch.append({"argv": argv, "env": case.env, "cwd": str(cwd), "out": str(root / f"out-{i}")})
    done = subprocess.run(
        [sys.executable, str(REPO / "tests" / "forked_locust.py")],
        input=json.dumps(batch),
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    gateway.shutdown()
    return {
        case.name: (result, root / f"case-{i}", [r for r in gateway.requests if r.startswith(f"/case-{i}/")])
        for i, (case, result) in enumerate(zip(CASES, json.loads(done.stdout), strict=True))
    }


def test_the_corpus_has_at_least_150_cases():
    assert len(CASES) >= 150 and len({c.name for c in CASES}) == len(CASES)


@pytest.mark.e2e
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_exits_2_with_one_line_and_leaves_nothing(results, case):
    result, cwd, requests = results[case.name]
    lines = [ln for ln in result["stderr"].splitlines() if ln.strip() and not BANNER.match(ln)]
    assert result["code"] == exit_codes.BAD_INPUT, result["stderr"][-1500:]
    assert len(lines) == 1 and "Traceback" not in result["stderr"], result["stderr"][-1500:]
    left = {str(p.relative_to(cwd)) for p in cwd.rglob("*") if p.is_file() or not any(p.iterdir())}
    assert left == set(case.files), left  # no run directory; the user's files are all that is there
    assert all((cwd / name).read_bytes() == content for name, content in case.files.items())
    assert not requests, requests
