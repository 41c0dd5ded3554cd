#!/usr/bin/env python3
"""A --worker for mlx5-lm-vhostd whose exit report reaches the supervisor after its
death does, in that order every time: a test of what the supervisor makes of the race
between a worker's last message and its SIGCHLD. It speaks the channel as
fake_worker.py does (adds answered, no DPDK, no socket). Told to exit (the service
stopping; its SIGTERM is ignored), it stops the supervisor (SIGSTOP, and waits to see
it stopped), leaves a child holding the channel, and exits 3 as a worker that leaked
does: its SIGCHLD is the first thing the stopped supervisor has to handle. The child,
once the worker is dead (a zombie: the stopped supervisor cannot reap it), writes the
worker's exit report {"event": "exit", "leaked": LATE_LEAKED} on the channel, says so
on stderr, closes the channel and lets the supervisor go on (SIGCONT). With
LATE_REPORT=0 it exits 3 at once and never sends the report.

With LATE_ANSWER_MARK set, the first worker to get an add while that file does not
exist creates it and dies (exit 1) the same way, its answer to the add written by its
child after its death: what the supervisor makes of an answer that races its
worker's SIGCHLD. Its restarts, the file there, answer as the others do."""
import json
import os
import signal
import sys
import time


def state(pid):
    """The state letter of process pid (/proc/PID/stat), or None once it is gone."""
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().rsplit(')', 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return None


def wait_state(pid, letters, what, timeout=30.0):
    """Until process pid is in one of the states letters (polled: no event tells)."""
    deadline = time.monotonic() + timeout
    while state(pid) not in letters:
        if time.monotonic() > deadline:
            sys.exit(f'late_exit_worker: {what} not seen within {timeout} s')
        time.sleep(0.005)


def sent_after_death(ch, send, msg, what, status):
    """The worker exits status with the supervisor stopped; a child it leaves holding
    the channel writes msg there once the worker is dead, says so (what) on stderr and
    lets the supervisor go on. Never returns."""
    sup, me = os.getppid(), os.getpid()
    try:
        os.kill(sup, signal.SIGSTOP)
        wait_state(sup, 'Tt', f'the supervisor {sup} stopped')
        if os.fork() > 0:
            os._exit(status)
        wait_state(me, 'Z', f'the worker {me} dead')
        send(msg)
        print(f'late_exit_worker {me}: {what} sent after its death', file=sys.stderr,
              flush=True)
        ch.close()
    finally:
        # Whatever failed here, the supervisor is not left stopped.
        os.kill(sup, signal.SIGCONT)
    os._exit(0)


def main():
    chan = int(sys.argv[sys.argv.index('--channel') + 1])
    leaked = int(os.environ.get('LATE_LEAKED', '2'))
    answer_mark = os.environ.get('LATE_ANSWER_MARK')
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    ch = os.fdopen(chan, 'r+b', buffering=0)

    def send(m):
        ch.write(json.dumps(m).encode() + b'\n')

    send({'event': 'ready', 'pid': os.getpid()})
    for line in ch:
        req = json.loads(line)
        if req['op'] == 'add':
            answer = {'id': req['id'], 'result': {'name': req['name'], 'state': 'waiting'}}
            if answer_mark is not None and not os.path.exists(answer_mark):
                open(answer_mark, 'w').close()
                sent_after_death(ch, send, answer, f'answer to add {req["name"]}', 1)
            send(answer)
        elif req['op'] == 'remove':
            send({'id': req['id'], 'result': {'name': req['name'], 'was': 'waiting'}})
        elif req['op'] == 'exit':
            break
        else:
            send({'id': req['id'], 'error': {'code': -32001, 'message': 'late_exit_worker'}})
    if os.environ.get('LATE_REPORT') == '0':
        # A worker that leaked and whose report never came: its exit status alone says so.
        print(f'late_exit_worker {os.getpid()}: exits 3 without its report', file=sys.stderr,
              flush=True)
        ch.close()
        os._exit(3)
    sent_after_death(ch, send, {'event': 'exit', 'leaked': leaked}, 'exit report', 3)


if __name__ == '__main__':
    main()
