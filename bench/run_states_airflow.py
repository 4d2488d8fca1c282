"""Airflow's side of the run-states benchmark (:mod:`bench.bench_run_states`): a triggerer's supervisor
answering its trigger runner's ``GetTaskStates`` messages, in a process of its own.

The trigger runner's side is Airflow's own: its ``TriggerCommsDecoder`` (frames, request ids, pydantic
models) over a Unix socket, as in a triggerer. This process reads each frame, validates it as the
triggerer's supervisor validates what a trigger may send (``ToTriggerSupervisor``), and answers what
Airflow's execution API answers for the runs named: per run, every task's state (the upstream ``running``,
then ``success`` once the benchmark releases it). The execution API's own work (one request, one query
of Airflow's metadata database per question) is not done here; the questions per tick count it.
"""

from __future__ import annotations

import socket


def serve(path: str, tasks: list[str], released, asked, ready) -> None:
    """Answer on the Unix socket ``path`` until the runner hangs up; ``released`` (an event) turns the
    upstream ``success``; ``asked`` (a shared int) counts the questions."""
    from airflow.jobs.triggerer_job_runner import ToTriggerSupervisor
    from airflow.sdk.execution_time.comms import (
        ErrorResponse,
        GetTaskStates,
        TaskStatesResult,
        _RequestFrame,
        _ResponseFrame,
    )
    from msgspec.msgpack import Decoder
    from pydantic import TypeAdapter

    decoder, validate = Decoder(_RequestFrame), TypeAdapter(ToTriggerSupervisor).validate_python
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    ready.set()
    conn, _ = server.accept()
    stream = conn.makefile("rb")
    while True:
        head = stream.read(4)
        if len(head) < 4:
            return
        frame = decoder.decode(stream.read(int.from_bytes(head, "big")))
        msg = validate(frame.body)
        if isinstance(msg, GetTaskStates):
            with asked.get_lock():
                asked.value += 1
            up = "success" if released.is_set() else "running"
            states = {t: "deferred" for t in tasks} | {"up": up}
            reply = _ResponseFrame(
                id=frame.id, body=TaskStatesResult(task_states={r: states for r in msg.run_ids}).model_dump()
            )
        else:
            reply = _ResponseFrame(id=frame.id, error=ErrorResponse(detail={"unexpected": msg.type}).model_dump())
        conn.sendall(reply.as_bytes())


async def connect(path: str):
    """The trigger runner's comms, connected to ``path``, installed as Airflow's ``SUPERVISOR_COMMS``."""
    import asyncio

    from airflow.jobs.triggerer_job_runner import TriggerCommsDecoder
    from airflow.sdk.execution_time import task_runner

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    reader, writer = await asyncio.open_unix_connection(sock=sock)
    comms = TriggerCommsDecoder(async_writer=writer, async_reader=reader, socket=sock)
    await comms.start_reader()
    task_runner.SUPERVISOR_COMMS = comms
    return writer
