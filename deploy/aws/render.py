#!/usr/bin/env python3
"""Render deploy/aws/ringi.yaml into the template CloudFormation deploys (Python standard library only).

    python3 deploy/aws/render.py                 # the deployable template on stdout
    python3 deploy/aws/render.py --out FILE      # ... into FILE

The template keeps the example state machine's definition in one place, docs/workflow/ (plain CloudFormation
cannot include a local file without S3). It holds a marker instead, on a line of its own:

    DefinitionString: "{{ringi:definition docs/workflow/approval.jsonpath.asl.json}}"

render() replaces each marker with the file's JSON as an Fn::Sub literal block:

    DefinitionString: !Sub |-
      {
        "Comment": ...

The JSON is the file's, parsed and serialised again (the same document), with one documented substitution: in
every `events:putEvents` Task entry, a literal `EventBusName` becomes `${EventBusName}`, so the state machine
puts its events on the bus named by the stack parameter of that name. Any other `${` in the file is escaped as
`${!`, which Fn::Sub turns back into `${`. Resolving the Fn::Sub with EventBusName=default gives the docs file
back. The JSON is ASCII (non-ASCII characters as JSON \\u escapes) and a YAML literal block takes it verbatim.
"""
import argparse
import json
import re
import sys
from pathlib import Path

TEMPLATE = Path("deploy/aws/ringi.yaml")
BUS_PARAMETER = "EventBusName"
PUT_EVENTS = "arn:aws:states:::events:putEvents"
_MARKER = re.compile(
    r'^(?P<indent>[ \t]*)DefinitionString:[ \t]*"\{\{ringi:definition (?P<path>[^"{}]+)\}\}"[ \t]*$', re.M)
_SENTINEL = "\x00ringi-event-bus\x00"  # cannot occur in parsed JSON text as a raw character


def _bus_to_parameter(node) -> None:
    """Point the literal EventBusName of every events:putEvents entry at the stack parameter (in place)."""
    if isinstance(node, dict):
        if node.get("Type") == "Task" and str(node.get("Resource", "")).startswith(PUT_EVENTS):
            for key in ("Parameters", "Arguments"):  # JSONPath / JSONata
                args = node.get(key)
                entries = args.get("Entries") if isinstance(args, dict) else None
                for entry in entries if isinstance(entries, list) else ():
                    if isinstance(entry, dict) and isinstance(entry.get("EventBusName"), str):
                        entry["EventBusName"] = _SENTINEL
        for value in node.values():
            _bus_to_parameter(value)
    elif isinstance(node, list):
        for value in node:
            _bus_to_parameter(value)


def definition_sub(asl_text: str) -> str:
    """The Fn::Sub string for an ASL document (see the module docstring)."""
    asl = json.loads(asl_text)
    _bus_to_parameter(asl)
    text = json.dumps(asl, indent=2, ensure_ascii=True)
    text = text.replace("${", "${!")  # literal, not a substitution
    return text.replace(json.dumps(_SENTINEL), json.dumps("${" + BUS_PARAMETER + "}"))


def render(repo_root: Path) -> str:
    """The deployable template text: deploy/aws/ringi.yaml with every definition marker filled in."""
    root = Path(repo_root).resolve()
    template = (root / TEMPLATE).read_text(encoding="utf-8")

    def fill(m: re.Match) -> str:
        source = (root / m["path"]).resolve()
        if root not in source.parents:
            raise ValueError(f"{TEMPLATE}: marker points outside the repository: {m['path']}")
        body = definition_sub(source.read_text(encoding="utf-8")).splitlines()
        pad = m["indent"] + "  "
        return f'{m["indent"]}DefinitionString: !Sub |-\n' + "\n".join(pad + line for line in body)

    rendered, count = _MARKER.subn(fill, template)
    if count == 0 or "{{ringi:" in rendered:
        raise ValueError(f"{TEMPLATE}: expected definition markers on lines of their own, found {count}")
    header = (f"# Rendered by deploy/aws/render.py from {TEMPLATE} and the files its markers name; "
              "edit those, not this.\n")
    return header + rendered


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the template here instead of stdout")
    args = parser.parse_args(argv)
    text = render(Path(__file__).resolve().parents[2])
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
