#!/usr/bin/env python3
"""Pairs two `profiledrop share --json` processes on loopback, standing in for both users.

Usage: demo-pair.py TOOL PORT WORK TITLE

Each device keeps its identity key and its known peers in WORK/<name>/ and saves the card it
receives in WORK/received-by-<name>/. When both devices ask for consent, the two codes are compared,
as two people would compare their screens: both answer {"decision":"share"} if they match, and
{"decision":"decline"} otherwise. Exits 0 when both devices exchanged cards.

Only the Python standard library is used.
"""

import json
import os
import queue
import subprocess
import sys
import threading
import time

DEVICES = [("bori", "Examples/bori.json"), ("max", "Examples/max.json")]
# Each process gives up after this many seconds; the script waits a little longer for both.
PROCESS_TIMEOUT = 30


def spaced(code):
    return f"{code[:3]} {code[3:]}" if code and len(code) == 6 else str(code)


def who(event):
    return f"known peer “{event.get('name')}”" if event.get("known") else "new device"


class Device:
    def __init__(self, name, card, tool, port, work, events):
        self.name = name
        self.label = f"[{name}]".ljust(7)
        home = os.path.join(work, name)
        os.makedirs(home, mode=0o700, exist_ok=True)
        arguments = [
            tool, "share", "--profile", card, "--json",
            "--interface", "lo", "--port", str(port), "--timeout", str(PROCESS_TIMEOUT),
            "--key-file", os.path.join(home, "key"),
            "--known-peers", os.path.join(home, "known-peers"),
            "--save", os.path.join(work, f"received-by-{name}"),
        ]
        self.process = subprocess.Popen(
            arguments, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, bufsize=1)
        self.consent = None
        self.closed = None
        self.seen = set()
        for stream, kind in ((self.process.stdout, "out"), (self.process.stderr, "err")):
            threading.Thread(target=self.pump, args=(stream, kind, events), daemon=True).start()

    def pump(self, stream, kind, events):
        for line in stream:
            events.put((self, kind, line.rstrip("\n")))
        events.put((self, kind, None))

    def say(self, text):
        print(f"{self.label}{text}", flush=True)

    def answer(self, decision):
        try:
            self.process.stdin.write(json.dumps({"decision": decision}) + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError):
            self.say("cannot answer: the process already ended")

    def show(self, event):
        """Prints a readable line for the events a person cares about."""
        kind = event.get("event")
        first = kind not in self.seen
        self.seen.add(kind)
        if kind == "advertising" and first:
            self.say(f"device {event.get('device')} looking for a peer")
        elif kind == "peer_found" and first:
            self.say(f"found device {event.get('peer')}")
        elif kind == "secured":
            self.say(f"secure channel with {event.get('peer')}; bringing the devices together")
        elif kind == "in_range":
            self.say(f"in range ({event.get('distance_cm')} cm)")
        elif kind == "verified":
            self.say(f"code {spaced(event.get('code'))} ({who(event)})")
            if event.get("interrupted_before", 0) > 0:
                self.say(f"WARNING: {event['interrupted_before']} earlier pairing(s) interrupted")
        elif kind == "consent":
            self.say(f"asks: share with this {who(event)}? (answer within {event.get('timeout_s')} s)")
        elif kind == "decision":
            self.say(f"answered {event.get('decision')}")
        elif kind == "peer_remembered":
            stored = "" if event.get("stored") else " (NOT stored)"
            self.say(f"remembered “{event.get('name')}” ({event.get('fingerprint')}){stored}")
        elif kind == "pairing_interrupted":
            self.say(f"WARNING: pairing interrupted after code {spaced(event.get('code'))}: {event.get('detail')}")
        elif kind == "known_peer_mismatch":
            self.say(f"WARNING: a device claimed to be “{event.get('name')}” and could not prove it")
        elif kind == "incompatible_peer":
            self.say(f"device {event.get('peer')} speaks protocol version {event.get('version')}; cannot pair")
        elif kind == "input_error":
            self.say(f"input error: {event.get('detail')}")
        elif kind == "session_ended":
            self.say("session ended; looking for another peer")
        elif kind == "closed":
            card = event.get("card")
            received = f"; received {card['name']} (owner {card['owner']})" if card else "; no card received"
            self.say(f"closed: {event.get('detail') or event.get('reason')}{received}")


def main():
    if len(sys.argv) != 5:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    tool, port, work, title = sys.argv[1:]
    print(f"demo: {title}", flush=True)
    events = queue.Queue()
    devices = [Device(name, card, tool, port, work, events) for name, card in DEVICES]
    streams_open = 2 * len(devices)
    answered = False
    give_up = time.monotonic() + PROCESS_TIMEOUT + 10
    while streams_open > 0:
        try:
            device, kind, line = events.get(timeout=max(0.1, give_up - time.monotonic()))
        except queue.Empty:
            print("demo: the devices did not finish in time; stopping them", flush=True)
            for device in devices:
                device.process.kill()
            break
        if line is None:
            streams_open -= 1
            continue
        if kind == "err":
            device.say(line)
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            device.say(f"unreadable line: {line}")
            continue
        device.show(event)
        if event.get("event") == "consent":
            device.consent = event.get("code")
        elif event.get("event") == "session_ended":
            device.consent = None
        elif event.get("event") == "closed":
            device.closed = event
        if not answered and all(d.consent for d in devices):
            answered = True
            codes = {d.consent for d in devices}
            if len(codes) == 1:
                print(f"demo: codes match ({spaced(devices[0].consent)}), both answer share", flush=True)
                decision = "share"
            else:
                shown = " and ".join(spaced(d.consent) for d in devices)
                print(f"demo: codes DIFFER ({shown}), both answer decline", flush=True)
                decision = "decline"
            for d in devices:
                d.answer(decision)
    status = 0
    for device in devices:
        code = device.process.wait()
        if code != 0 or not device.closed or device.closed.get("reason") != "exchanged":
            status = 1
    print(f"demo: {'both devices exchanged cards' if status == 0 else 'the exchange did not complete'}",
          flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
