"""The live microphone through `sounddevice` (PortAudio), as 16 kHz mono blocks.

`sounddevice` is imported only when a microphone is opened: importing it without the system's
PortAudio library fails, and files, stdin and everything after the source must work without it.

PortAudio calls back from its own thread with each recorded block; the callback only copies the
block into a queue, and the iterator converts and stamps it. When the device goes away (the stream
stops, or no audio arrives for `stall_timeout` seconds) everything already queued is delivered
first, then the microphone is reopened with growing pauses until it is back.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from ..errors import InputError
from ..records import SAMPLE_RATE, AudioBlock
from .base import AudioSource
from .resample import Converter

log = logging.getLogger(__name__)

# Callbacks arrive with scheduling jitter of up to a device latency or two; a block whose wall-clock
# time strays further than this from the sample count means audio was lost or the clocks drifted,
# and the timeline is restarted from the wall clock.
RESYNC_SECONDS = 1.0
_POLL_SECONDS = 0.1


class MicrophoneError(InputError):
    """The microphone cannot be opened: PortAudio missing, no such device, or settings it refuses."""


@dataclass(frozen=True)
class InputDevice:
    """An input device as PortAudio lists it."""

    index: int
    name: str
    channels: int
    default_rate: float

    @classmethod
    def from_info(cls, info: Any, index: int | None = None) -> InputDevice:
        return cls(
            index=int(info.get("index", index if index is not None else -1)),
            name=str(info["name"]),
            channels=int(info["max_input_channels"]),
            default_rate=float(info["default_samplerate"]),
        )

    def describe(self) -> str:
        return f"{self.index}: {self.name} ({self.channels} ch, {self.default_rate:g} Hz)"


def import_sounddevice() -> ModuleType:
    """The `sounddevice` module, or a MicrophoneError that says what to install."""
    try:
        import sounddevice
    except (ImportError, OSError) as exc:
        raise MicrophoneError(
            f"the microphone needs the PortAudio library ({exc}); install it (Debian/Ubuntu: "
            "apt install libportaudio2) or read audio from a file or stdin instead"
        ) from None
    return sounddevice


def list_input_devices(sd: ModuleType | None = None) -> list[InputDevice]:
    """Every device that can record, in PortAudio's order."""
    sd = sd or import_sounddevice()
    return [
        InputDevice.from_info(info, index)
        for index, info in enumerate(sd.query_devices())
        if int(info["max_input_channels"]) > 0
    ]


def _listing(devices: Sequence[InputDevice]) -> str:
    if not devices:
        return "no input devices are available (is a microphone connected, and can this user reach the audio server?)"
    lines = "\n".join(f"  {d.describe()}" for d in devices)
    return f"available input devices:\n{lines}\nset audio.device to a name (or part of one) or an index from this list"


def find_device(sd: ModuleType, spec: str | int | None) -> InputDevice:
    """The device `spec` names: an index, a case-insensitive part of a name, or None for the default."""
    devices = list_input_devices(sd)
    if spec is None:
        try:
            info = sd.query_devices(kind="input")
        except (sd.PortAudioError, ValueError):
            raise MicrophoneError(f"there is no default input device; {_listing(devices)}") from None
        device = InputDevice.from_info(info)
        if device.channels < 1:
            raise MicrophoneError(f"the default device {device.name!r} cannot record; {_listing(devices)}")
        return device
    if isinstance(spec, int) or spec.strip().isdigit():
        index = int(spec)
        for device in devices:
            if device.index == index:
                return device
        raise MicrophoneError(f"there is no input device with index {index}; {_listing(devices)}")
    wanted = spec.strip().lower()
    matches = [d for d in devices if d.name.lower() == wanted] or [d for d in devices if wanted in d.name.lower()]
    if not matches:
        raise MicrophoneError(f"no input device matches {spec!r}; {_listing(devices)}")
    if len(matches) > 1:
        log.info("several input devices match %r (%s); using %s", spec, ", ".join(map(str, matches)), matches[0].name)
    return matches[0]


class _Capture:
    """One open PortAudio input stream and the queue its callback fills."""

    def __init__(self, sd: ModuleType, device: InputDevice, block_ms: int, max_queue_blocks: int) -> None:
        self.sd = sd
        self.device = device
        self.rate, self.channels = self._settings(sd, device)
        self.queue: queue.Queue[tuple[float, np.ndarray]] = queue.Queue(maxsize=max_queue_blocks)
        self.finished = threading.Event()
        self.overflows = 0  # PortAudio's own overruns (we were too slow to take audio off the device)
        self.dropped_frames = 0  # blocks the iterator did not take in time (the queue was full)
        try:
            self.stream = sd.InputStream(
                device=device.index,
                samplerate=self.rate,
                channels=self.channels,
                dtype="float32",
                blocksize=max(1, int(self.rate * block_ms / 1000)),
                callback=self._callback,
                finished_callback=self.finished.set,
            )
        except sd.PortAudioError as exc:
            raise MicrophoneError(f"cannot open input device {device.describe()}: {exc}") from None
        try:
            self.stream.start()
        except sd.PortAudioError as exc:
            self.close()
            raise MicrophoneError(f"cannot start input device {device.describe()}: {exc}") from None

    @staticmethod
    def _settings(sd: ModuleType, device: InputDevice) -> tuple[float, int]:
        """16 kHz mono if the device takes it; else its own rate (resampled here) and channel count."""
        rates = [float(SAMPLE_RATE)] + ([device.default_rate] if device.default_rate != SAMPLE_RATE else [])
        channel_counts = [1] + ([device.channels] if device.channels > 1 else [])
        reasons = []
        for rate in rates:
            for channels in channel_counts:
                try:
                    sd.check_input_settings(device=device.index, channels=channels, dtype="float32", samplerate=rate)
                except (sd.PortAudioError, ValueError) as exc:
                    reasons.append(f"{rate:g} Hz x {channels} ch: {exc}")
                    continue
                return rate, channels
        raise MicrophoneError(f"input device {device.describe()} refuses every setting tried: {'; '.join(reasons)}")

    def _callback(self, indata: np.ndarray, frames: int, time_info: Any, status: Any) -> None:
        # PortAudio's thread: copy (indata is reused after we return) and get out; nothing here may raise.
        if getattr(status, "input_overflow", False):
            self.overflows += 1
        try:
            self.queue.put_nowait((time.time(), indata.copy()))
        except queue.Full:
            self.dropped_frames += frames

    @property
    def active(self) -> bool:
        return bool(self.stream.active)

    def close(self) -> None:
        try:
            self.stream.stop()
            self.stream.close()
        except self.sd.PortAudioError as exc:
            # A device that vanished often cannot even be stopped cleanly; the stream is gone either way.
            log.debug("closing input stream on %s: %s", self.device.name, exc)


class _Timeline:
    """Stamps one capture's blocks by sample count from the first block's wall-clock time."""

    def __init__(self, capture: _Capture, description: str) -> None:
        self.rate, self.channels = capture.rate, capture.channels
        self.description = description
        self.converter = Converter(self.rate, self.channels)
        self.anchor: float | None = None  # wall-clock time of the timeline's first sample
        self.recorded = 0  # frames at the device rate since `anchor`
        self.emitted = 0  # samples at SAMPLE_RATE since `anchor`

    def add(self, when: float, data: np.ndarray) -> Iterator[AudioBlock]:
        """`data` was handed over at wall-clock `when`, so it began one block length earlier."""
        first_sample = when - len(data) / self.rate
        if self.anchor is None:
            self.anchor = first_sample
        else:
            drift = first_sample - (self.anchor + self.recorded / self.rate)
            if abs(drift) > RESYNC_SECONDS:
                log.warning(
                    "%s: audio timeline off by %.2f s (audio lost or clocks drifted); restarting it",
                    self.description,
                    drift,
                )
                yield from self.tail()
                self.converter = Converter(self.rate, self.channels)
                self.anchor, self.recorded, self.emitted = first_sample, 0, 0
        self.recorded += len(data)
        yield from self._emit(self.converter.convert(data))

    def end(self) -> float | None:
        """Where the audio emitted so far ends on the wall clock (None before any)."""
        return self.anchor + self.emitted / SAMPLE_RATE if self.anchor is not None else None

    def tail(self) -> Iterator[AudioBlock]:
        """What the resampler still holds: the end of the stretch must not be lost."""
        yield from self._emit(self.converter.flush())

    def _emit(self, samples: np.ndarray) -> Iterator[AudioBlock]:
        if len(samples) and self.anchor is not None:
            yield AudioBlock(samples=samples, start=self.anchor + self.emitted / SAMPLE_RATE)
            self.emitted += len(samples)


class Microphone(AudioSource):
    """A live input device as an endless stream of 16 kHz mono blocks.

    `device` is an index, a case-insensitive part of a device name, or None for the system
    default; the device must exist when the Microphone is made (MicrophoneError lists the ones
    that do). A device that only records at 44.1/48 kHz, or in stereo, is opened as it is and
    converted here.

    When the device disappears mid-stream, the blocks it already recorded are delivered, a
    warning is logged, and it is reopened (looked up again by name, so a replugged USB microphone
    with a new index is found) after each of `retry_delays` in turn, repeating the last, until it
    is back or `max_retries` reopenings have failed (None: keep trying; a daemon should). Blocks
    after a gap start later than the gap began, which the segmenter sees as a break.
    """

    def __init__(
        self,
        device: str | int | None = None,
        *,
        block_ms: int = 30,
        stall_timeout: float = 2.0,
        retry_delays: Sequence[float] = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0),
        max_retries: int | None = None,
        max_queue_seconds: float = 30.0,
    ) -> None:
        if block_ms <= 0:
            raise ValueError(f"block_ms must be positive; got {block_ms}")
        if not retry_delays:
            raise ValueError("retry_delays needs at least one delay")
        self._sd = import_sounddevice()
        self.spec = device
        self.block_ms = block_ms
        self.stall_timeout = stall_timeout
        self.retry_delays = tuple(retry_delays)
        self.max_retries = max_retries
        self._max_queue_blocks = max(1, int(max_queue_seconds * 1000 / block_ms))
        self._closed = threading.Event()
        self.device = find_device(self._sd, device)
        self.description = f"microphone {self.device.name!r}"
        #: How many times the device was lost and reopened; a status display can show it.
        self.reconnects = 0

    def close(self) -> None:
        self._closed.set()

    def blocks(self) -> Iterator[AudioBlock]:
        capture: _Capture | None = _Capture(self._sd, self.device, self.block_ms, self._max_queue_blocks)
        self._log_opened(capture)
        failures = 0
        try:
            while capture is not None:
                reason, delivered = yield from self._pump(capture)
                capture.close()
                capture = None
                if reason is None:
                    return
                if delivered:
                    failures = 0
                log.warning("%s: %s; everything recorded so far was kept, reopening it", self.description, reason)
                self.problem = f"{self.description} lost ({reason}); reopening it"
                while capture is None:
                    if self.max_retries is not None and failures >= self.max_retries:
                        raise MicrophoneError(
                            f"{self.description} was lost ({reason}) and is not back after {failures} attempts"
                        )
                    delay = self.retry_delays[min(failures, len(self.retry_delays) - 1)]
                    failures += 1
                    if self._closed.wait(delay):
                        return
                    try:
                        self._refresh_device_list()
                        device = find_device(self._sd, self.spec)
                        capture = _Capture(self._sd, device, self.block_ms, self._max_queue_blocks)
                    except MicrophoneError as exc:
                        log.warning("%s still unavailable (attempt %d): %s", self.description, failures, exc)
                self.device = capture.device
                self.reconnects += 1
                self.problem = None
                self._log_opened(capture)
        finally:
            if capture is not None:
                capture.close()

    def _log_opened(self, capture: _Capture) -> None:
        how = "" if capture.rate == SAMPLE_RATE and capture.channels == 1 else ", converted here"
        log.info("%s opened at %g Hz x %d ch%s", self.description, capture.rate, capture.channels, how)

    def _refresh_device_list(self) -> None:
        # PortAudio enumerates devices once, at initialisation: a replugged microphone is only seen
        # after re-initialising it (python-sounddevice #125). Our stream is closed by now.
        terminate, initialize = getattr(self._sd, "_terminate", None), getattr(self._sd, "_initialize", None)
        if terminate is None or initialize is None:
            return
        try:
            terminate()
            initialize()
        except self._sd.PortAudioError as exc:
            log.debug("re-initialising PortAudio: %s", exc)

    def _pump(self, capture: _Capture) -> Generator[AudioBlock, None, tuple[str | None, bool]]:
        """Deliver `capture`'s audio; return (None if closed, else why it was lost; whether audio came)."""
        timeline = _Timeline(capture, self.description)
        delivered = False
        overflows = dropped = 0
        last_audio = time.monotonic()
        while True:
            if self._closed.is_set():
                yield from timeline.tail()
                return None, delivered
            try:
                when, data = capture.queue.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                reason = self._lost(capture, last_audio)
                if reason is None:
                    continue
                # The callback may have queued a last block just before the stream ended.
                while True:
                    try:
                        when, data = capture.queue.get_nowait()
                    except queue.Empty:
                        break
                    delivered = True
                    yield from timeline.add(when, data)
                yield from timeline.tail()
                # Speech that ended just before the device vanished must not wait for it to return
                # (possibly never) to be heard: the break closes it now.
                end = timeline.end()
                if end is not None:
                    yield AudioBlock(samples=np.zeros(0, dtype=np.int16), start=end)
                return reason, delivered
            last_audio = time.monotonic()
            delivered = True
            if capture.overflows != overflows or capture.dropped_frames != dropped:
                log.warning(
                    "%s: audio lost: %d device overruns, %d frames not taken in time",
                    self.description,
                    capture.overflows - overflows,
                    capture.dropped_frames - dropped,
                )
                overflows, dropped = capture.overflows, capture.dropped_frames
            yield from timeline.add(when, data)

    def _lost(self, capture: _Capture, last_audio: float) -> str | None:
        if capture.finished.is_set() or not capture.active:
            return "the input stream stopped (device unplugged or failed)"
        silent_for = time.monotonic() - last_audio
        if silent_for > self.stall_timeout:
            return f"no audio arrived for {silent_for:.1f} s"
        return None
