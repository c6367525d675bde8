"""The API's routes, one router per concern; `ROUTERS` is the order `create_app` includes them in."""

from fastapi import APIRouter

from . import ask, data, digest, memory, push_to_talk, speakers, status, transcript

ROUTERS: tuple[APIRouter, ...] = (
    status.router,
    ask.router,
    transcript.router,
    push_to_talk.router,
    speakers.router,
    memory.router,
    digest.router,
    data.router,
)
