"""Smoke reports: JUnit XML (a testsuite per scenario, a testcase per step) and JSON (docs/ci.md);
the runner masked every text, the writers mask again."""

from __future__ import annotations

import json
import re
import socket
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from walletctl.errors import UsageError
from walletctl.masking import Masker
from walletctl.ops.smoke import ScenarioResult, SmokeReport, StepResult

REPORT_VERSION = 1
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: str, masker: Masker) -> str:
    return _XML_INVALID.sub("?", masker.text(text))


def _secs(value: float) -> str:
    return f"{value:.3f}"


def failure_text(step: StepResult) -> str:
    """The body of a JUnit failure: the message, then the step's HTTP exchanges."""
    parts = [step.message or ""]
    if step.exchanges:
        parts.append("HTTP exchanges of this step (secrets masked):")
        parts.extend(ex.summary() for ex in step.exchanges)
    return "\n".join(parts)


def to_junit(report: SmokeReport, masker: Masker) -> str:
    """The report as a JUnit XML document (UTF-8 text with an XML declaration)."""
    root = ET.Element("testsuites", name="walletctl smoke", tests=str(len(report.steps)),
                      failures=str(report.count("failed")), errors=str(report.count("error")),
                      skipped=str(report.count("skipped")), time=_secs(report.duration))
    hostname = socket.gethostname()
    for index, scenario in enumerate(report.scenarios):
        root.append(_suite(scenario, index, report, hostname, masker))
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"


def _suite(
    scenario: ScenarioResult, index: int, report: SmokeReport, hostname: str, masker: Masker
) -> ET.Element:
    suite = ET.Element(
        "testsuite", name=scenario.name, id=str(index), tests=str(len(scenario.steps)),
        failures=str(scenario.count("failed")), errors=str(scenario.count("error")),
        skipped=str(scenario.count("skipped")), time=_secs(scenario.duration),
        timestamp=(scenario.started_at or report.started_at).replace("+00:00", ""),
        hostname=hostname)
    props = ET.SubElement(suite, "properties")
    _prop(props, "run_id", report.run_id)
    for key, value in report.target.items():
        _prop(props, f"target.{key}", _clean(value, masker))
    for ref in scenario.references:
        _prop(props, "reference", ref)
    for step in scenario.steps:
        case = ET.SubElement(suite, "testcase", name=step.name,
                             classname=f"walletctl.smoke.{scenario.name}",
                             time=_secs(step.duration))
        message = _clean(step.message or "", masker)
        if step.status in ("failed", "error"):
            tag = "failure" if step.status == "failed" else "error"
            node = ET.SubElement(case, tag, message=message.splitlines()[0] if message
                                 else step.status, type=step.error_type or tag)
            node.text = _clean(failure_text(step), masker)
        elif step.status in ("skipped", "pending", "running"):
            ET.SubElement(case, "skipped", message=message or "not run")
        elif step.detail:
            out = ET.SubElement(case, "system-out")
            out.text = _clean(step.detail, masker)
    if scenario.references:
        out = ET.SubElement(suite, "system-out")
        out.text = "references (walletctl lookup REF):\n" + "\n".join(scenario.references)
    return suite


def _prop(parent: ET.Element, name: str, value: str) -> None:
    ET.SubElement(parent, "property", name=name, value=value)


def to_data(report: SmokeReport, masker: Masker) -> dict[str, Any]:
    """The report as one JSON-ready document (its shape is documented in docs/ci.md)."""
    doc: dict[str, Any] = {
        "version": REPORT_VERSION, "run_id": report.run_id, "target": report.target,
        "started_at": report.started_at, "duration": round(report.duration, 4),
        "status": "passed" if report.exit_code == 0 else "failed",
        "exit_code": int(report.exit_code), "aborted": report.aborted,
        "counts": {"scenarios": len(report.scenarios), "steps": len(report.steps),
                   "passed": report.count("passed"), "failed": report.count("failed"),
                   "errors": report.count("error"), "skipped": report.count("skipped")},
        "scenarios": [
            {"name": sc.name, "description": sc.description, "status": sc.status,
             "duration": round(sc.duration, 4), "references": sc.references,
             "steps": [{"name": st.name, "status": st.status,
                        "duration": round(st.duration, 4), "message": st.message,
                        "detail": st.detail, "error_type": st.error_type,
                        "needs": st.needs,
                        "exchanges": [ex.as_dict() for ex in st.exchanges]
                        if st.status in ("failed", "error") else []}
                       for st in sc.steps]}
            for sc in report.scenarios],
        "references": [{"scenario": r.scenario, "reference": r.reference, "label": r.label}
                       for r in report.references],
    }
    return masker.data(doc)  # type: ignore[no-any-return]


def to_json(report: SmokeReport, masker: Masker) -> str:
    return json.dumps(to_data(report, masker), indent=2, default=str) + "\n"


def write_text(path: Path, text: str) -> None:
    """Write a report file (parent directories are created: CI paths like reports/smoke.xml)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write report {path}: {exc.strerror or exc}") from None
