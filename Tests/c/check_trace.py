"""Checks the spans examples/trace.c writes: one OTLP/JSON-style span per line.

Reads the program's standard output; exits non-zero, saying why, unless
there are two load spans (each its own trace, with its cell's events) and
three job spans, each the child of a load span and within its time.
"""

import json
import sys


def fail(message: str) -> None:
    sys.exit(f"check_trace: {message}")


def main() -> None:
    spans = []
    for number, line in enumerate(sys.stdin, 1):
        try:
            spans.append(json.loads(line))
        except json.JSONDecodeError as error:
            fail(f"line {number} is not JSON: {error}")
    required = {"traceId", "spanId", "parentSpanId", "name", "kind", "startTimeUnixNano", "endTimeUnixNano",
                "attributes", "status"}
    for span in spans:
        if not required <= set(span):
            fail(f"missing fields {required - set(span)} in {span}")
        if len(span["traceId"]) != 32 or len(span["spanId"]) != 16:
            fail(f"bad ids in {span}")
        if int(span["startTimeUnixNano"]) > int(span["endTimeUnixNano"]):
            fail(f"a span ends before it starts: {span}")
    loads = {s["spanId"]: s for s in spans if s["name"] == "load"}
    jobs = [s for s in spans if s["name"] == "job"]
    if len(loads) != 2 or len(jobs) != 3:
        fail(f"{len(loads)} load spans and {len(jobs)} job spans, expected 2 and 3")
    if len({s["traceId"] for s in loads.values()}) != 2:
        fail("the loads share a trace")
    for job in jobs:
        parent = loads.get(job["parentSpanId"])
        if parent is None or parent["traceId"] != job["traceId"]:
            fail(f"a job span without its load span: {job}")
        if not int(parent["startTimeUnixNano"]) <= int(job["startTimeUnixNano"]) <= \
                int(job["endTimeUnixNano"]) <= int(parent["endTimeUnixNano"]):
            fail(f"a job span outside its load span: {job}")
    attempts = sorted(len([j for j in jobs if j["parentSpanId"] == span_id]) for span_id in loads)
    if attempts != [1, 2]:
        fail(f"job spans per load: {attempts}, expected [1, 2]")
    statuses = sorted(j["status"]["code"] for j in jobs)
    if statuses != ["STATUS_CODE_ERROR", "STATUS_CODE_OK", "STATUS_CODE_OK"]:
        fail(f"job statuses {statuses}")
    for load in loads.values():
        names = [e["name"] for e in load["events"]]
        if names[0] != "loading" or names[-1] != "loaded":
            fail(f"load events {names}")
    print(f"check_trace: {len(spans)} spans, as expected")


if __name__ == "__main__":
    main()
