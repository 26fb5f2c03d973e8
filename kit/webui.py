"""The Locust web UI as a cockpit: the current run's id, links to its report and files, live charts and
threshold states beside Locust's own, EDIT for the manual profile, what START will run (kit.start_form),
and the same live data as JSON and in Prometheus text format.

Only through Locust's documented extension points: routes and request hooks on `web_ui.app` (Flask) and
the Resources tab (template_args' extended tabs/tables, extra data on /stats/requests, as in Locust's
extend_web_ui example). Reads what the run writes; starts, stops and judges nothing itself (a start's
options begin from the command line's before Locust applies its form).
"""

from __future__ import annotations

import argparse
import html
import json
import logging
import math
from collections.abc import Callable, Mapping
from pathlib import Path

from jinja2.utils import htmlsafe_json_dumps
from locust.argument_parser import get_parser, ui_extra_args_dict
from locust.runners import STATE_RUNNING, STATE_SPAWNING

from contract import schema
from contract.cli import FORM_GROUPS, form_groups
from kit import prometheus, start_form
from kit.live import READY, LiveRun
from kit.session import Session
from kit.settings import KitSettings
from scenarios import registry
from scenarios.errors import ProfileConfigError
from scenarios.options import ProfileOptions, check_users
from scenarios.profile import params_of

TAB_KEY = "loadkit-resources"
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
log = logging.getLogger("loadkit")
ROOT = "/loadkit"
STATIC = Path(__file__).parent / "static"
SHAPE = "KitShape"  # locustfile.py's one shape: the kit's profiles run through it
_TEMPLATE_ARGS = "window.templateArgs = "
_COCKPIT_TAGS = (
    f'<link rel="stylesheet" href="{ROOT}/static/cockpit.css">'
    f'<script src="{ROOT}/static/cockpit.js" defer></script>'
)


def install(
    web_ui,
    session: Session,
    current: Callable[[], LiveRun],
    edit: Callable[[int, float], str | None],
    settings_for: Callable[[argparse.Namespace], KitSettings],
) -> None:
    """Add the cockpit's routes and hooks to Locust's web UI. `settings_for(options)`: the settings a
    start with these options would run with (raises KitError on a bad value)."""
    app = web_ui.app
    guard = web_ui.auth_required_if_enabled
    options = web_ui.environment.parsed_options
    form = start_form.StartForm.of(options, ui_extra_args_dict())
    groups = form_groups(get_parser()._actions)  # the parser Locust builds its form from, with our options
    if web_ui.userclass_picker_is_active:  # the picker offers (and preselects) the preset's agents only
        environment = web_ui.environment
        environment.available_user_classes = {c.__name__: c for c in environment.user_classes}
    _resources_tab(web_ui)

    @app.route(f"{ROOT}/")
    @guard
    def cockpit_page():
        return (STATIC / "cockpit.html").read_text(encoding="utf-8")

    @app.route(f"{ROOT}/static/<name>")
    @guard
    def cockpit_static(name: str):
        from flask import send_from_directory  # Locust's web UI is Flask, imported only when it runs

        return send_from_directory(STATIC, name)

    @app.route(f"{ROOT}/live.json")
    @guard
    def live_json():
        from flask import jsonify

        return jsonify(_snapshot(current()))

    @app.route(f"{ROOT}/form.json")
    @guard
    def form_json():
        return {"profiles": _profile_defaults(), "groups": FORM_GROUPS}

    @app.route(f"{ROOT}/preview", methods=["POST"])
    @guard
    def preview():
        from flask import request

        live = current()
        last_run = live.run_id if live.state != READY else None
        return start_form.preview(form, options, request.form, settings_for, last_run)

    @app.route(f"{ROOT}/metrics")
    @guard
    def live_metrics():
        return prometheus.exposition(current().snapshot()), 200, {"Content-Type": prometheus.CONTENT_TYPE}

    @app.route(f"{ROOT}/runs/<run_id>/")
    @guard
    def run_files(run_id: str):
        run_dir = _run_dir(session, run_id)
        names = sorted(p.name for p in run_dir.iterdir() if p.is_file())
        items = "".join(f'<li><a href="{html.escape(n)}">{html.escape(n)}</a></li>' for n in names)
        title = html.escape(run_id)
        return f"<!doctype html><title>{title}</title><h1>run {title}</h1><ul>{items}</ul>"

    @app.route(f"{ROOT}/runs/<run_id>/<path:name>")
    @guard
    def run_file(run_id: str, name: str):
        from flask import send_from_directory

        return send_from_directory(_run_dir(session, run_id).resolve(), name)

    @app.before_request
    def _swarm():
        """Locust's EDIT is a second /swarm while a run goes on: hand it to the run, answer as Locust.
        A start begins from the command line's options, then Locust applies its form."""
        from flask import jsonify, request

        if request.path != "/swarm" or request.method != "POST":
            return None
        if web_ui.environment.runner.state in (STATE_RUNNING, STATE_SPAWNING):
            return jsonify(_edit(request.form, edit, web_ui.environment.host))
        if web_ui.userclass_picker_is_active and request.form.get("shape_class", SHAPE) != SHAPE:
            message = f"choose the shape class {SHAPE}: the kit's load profiles run through it"
            return jsonify({"success": False, "message": message, "host": web_ui.environment.host})
        form.begin(options, request.form)
        return None

    @app.after_request
    def _cockpit_in_index(response):
        from flask import request

        if request.endpoint == "locust.index" and response.status_code == 200:
            response.direct_passthrough = False
            response.set_data(_cockpit_page(response.get_data(as_text=True), groups))
        elif request.path == "/stats/requests" and response.is_json:
            table = current().table()
            response.set_data(
                json.dumps({**response.json, "extended_stats": [{"key": TAB_KEY, "data": table}]})
            )
        return response


def _snapshot(live: LiveRun) -> dict:
    snapshot = live.snapshot()
    base = f"{ROOT}/runs/{live.run_id}/"
    snapshot["run"] |= {"files": base, "report": base + schema.REPORT_HTML}
    return snapshot


def _edit(form, edit: Callable[[int, float], str | None], host: str) -> dict:
    """Parse EDIT's user count and spawn rate and apply them; Locust's /swarm answer."""
    try:
        users, rate = int(form["user_count"]), float(form["spawn_rate"])
    except (KeyError, ValueError):
        return {"success": False, "message": "EDIT needs a whole user count and a spawn rate", "host": host}
    if users < 0 or not (rate > 0 and math.isfinite(rate)):
        return {"success": False, "message": "EDIT needs users >= 0 and a spawn rate > 0", "host": host}
    try:
        check_users(users)
    except ValueError as exc:
        return {"success": False, "message": f"EDIT: {exc}", "host": host}
    refused = edit(users, rate)
    message = refused or f"ramping to {users} users at {rate:g}/s"
    return {"success": refused is None, "message": message, "host": host}


def _cockpit_page(page: str, groups: Mapping[str, str]) -> str:
    """Locust's index page with the cockpit's script, the kit's shape first in the picker (the picker
    preselects the first; "Default" would bypass the kit's profiles), and list options as their text,
    grouped by `groups` (option dest -> form group)."""
    head, sep, rest = page.partition(_TEMPLATE_ARGS)
    if sep:
        args, end = json.JSONDecoder().raw_decode(rest)
        shapes = args.get("available_shape_classes") or []
        if SHAPE in shapes:
            args["available_shape_classes"] = [SHAPE] + [s for s in shapes if s != SHAPE]
        extra = start_form.lists_as_text(args.get("extra_options") or {})
        args["extra_options"] = start_form.grouped(extra, groups)
        page = head + sep + str(htmlsafe_json_dumps(args)) + rest[end:]
    return page.replace("</body>", _COCKPIT_TAGS + "</body>", 1)


def _profile_defaults() -> dict[str, dict]:
    """What each profile uses, with its defaults: the parameters it builds from an empty form."""
    found = {}
    for name in registry.PROFILE_NAMES:
        try:
            found[name] = params_of(registry.build_profile(name, ProfileOptions(profile=name)))
        except ProfileConfigError:  # a profile that needs its input (the trace replay: a trace)
            continue
    return found


def _run_dir(session: Session, run_id: str) -> Path:
    from flask import abort

    if run_id not in session.dirs:
        abort(404)
    return session.dirs[run_id]


def _resources_tab(web_ui) -> None:
    web_ui.template_args["extended_tabs"] = [{"title": "Resources", "key": TAB_KEY}]
    web_ui.template_args["extended_tables"] = [
        {
            "key": TAB_KEY,
            "structure": [
                {"key": "name", "title": "Gauge"},
                {"key": "now", "title": "Now"},
                {"key": "worst", "title": "Worst so far"},
            ],
        }
    ]


def warn_if_exposed(web_host: str) -> None:
    """The kit binds the web UI to 127.0.0.1 (kit/options.py); say so loudly when told otherwise."""
    if web_host not in LOOPBACK:
        log.warning(
            "loadkit: the web UI listens on %s, reachable from other machines, with no authentication "
            "unless --web-login/--web-auth is set: anyone who reaches it can start load",
            web_host or "all interfaces",
        )
