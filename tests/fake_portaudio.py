"""PortAudio faked at the `sounddevice` boundary: input devices that "hear" audio the test chooses.

Only the hardware is fake: `assistant.audio.microphone` runs unchanged on top of `FakePortAudio`,
which replaces the five things it calls (`query_devices`, `check_input_settings`, `InputStream`,
`_initialize`, `_terminate`). Two kinds of device:

- `FakeDevice` hears one WAV file in real time, as a room would, and can be made to vanish at a
  given second (tests/test_audio_sources.py, in-process, installed with `monkeypatch`);
- `PlaylistDevice` hears WAV files a test drops into a directory while a daemon subprocess
  runs, and vanishes while an `unplug` file is there (tests/fake_microphone/sitecustomize.py
  installs it for the life of that process; its docstring describes the protocol, and
  `Playlist` is the test's side of it).

Everything a device hands its stream is kept in `delivered`, so a test can compare what came
out of the microphone with what went in, sample for sample.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np
import sounddevice
import soundfile as sf

if TYPE_CHECKING:
    import pytest

# What vanishing looks like to a stream: "finish" = PortAudio ends it (finished callback, inactive);
# "stall" = it stays active but no more audio arrives (seen with some USB devices and PulseAudio).
LOSS_MODES = ("finish", "stall")


class FakeInput:
    """What every fake input device has: a place in PortAudio's list and the settings it accepts."""

    present: bool

    def __init__(
        self,
        index: int,
        name: str,
        *,
        rate: int,
        channels: int,
        rates: tuple[int, ...],
        only_native_channels: bool = False,
        fail_close: bool = False,
    ) -> None:
        self.index = index
        self.name = name
        self.rate = rate
        self.channels = channels
        self.rates = rates
        self.only_native_channels = only_native_channels
        # A vanished device often cannot even be stopped: PortAudio reports a host error then.
        self.fail_close = fail_close
        #: What each stream opened on this device handed to its callback, as (position, frames).
        self.delivered: list[list[tuple[int, np.ndarray]]] = []

    def supports(self, rate: float, channels: int) -> bool:
        if rate not in self.rates or channels > self.channels:
            return False
        return channels == self.channels or not self.only_native_channels

    def origin(self, rate: float) -> tuple[float, int]:
        """A new stream's clock: (monotonic time of frame 0, the frame it starts at)."""
        return time.monotonic(), 0

    def lost(self, position: int, rate: float) -> str | None:
        """None while the device is there; else how the stream at `position` experiences its loss."""
        return None

    def frames(self, position: int, count: int, channels: int) -> np.ndarray:
        raise NotImplementedError

    def refresh(self) -> None:
        """PortAudio re-enumerates its devices (`_initialize`)."""


class FakeDevice(FakeInput):
    """An input device that "hears" a WAV file, in real time, from the moment it is first opened.

    Like the room it is in, the audio moves on while the device is away: a stream reopened after
    an outage starts from where the recording has got to by then.
    """

    def __init__(
        self,
        index: int,
        name: str,
        wav: Path | None,
        *,
        rates: tuple[int, ...] = (16000,),
        only_native_channels: bool = False,
        fail_after: float | None = None,
        fail_mode: str = "finish",
        absent_refreshes: int = 0,
    ) -> None:
        if wav is None:  # an output-only device: listed, but it cannot record
            audio, rate = np.zeros((0, 0), dtype=np.float32), rates[0]
        else:
            audio, rate = sf.read(wav, dtype="float32", always_2d=True)
        assert rate in rates
        assert fail_mode in LOSS_MODES
        super().__init__(
            index, name, rate=rate, channels=audio.shape[1], rates=rates, only_native_channels=only_native_channels
        )
        self.audio = audio
        self.fail_after = fail_after
        self.fail_mode = fail_mode
        self.absent_refreshes = absent_refreshes
        self.present = True
        self.room_start: float | None = None

    def origin(self, rate: float) -> tuple[float, int]:
        if self.room_start is None:
            self.room_start = time.monotonic()
        return self.room_start, int((time.monotonic() - self.room_start) * rate)

    def lost(self, position: int, rate: float) -> str | None:
        if self.fail_after is None or position < self.fail_after * rate:
            return None
        self.fail_after = None
        self.present = False
        return self.fail_mode

    def frames(self, position: int, count: int, channels: int) -> np.ndarray:
        chunk = np.zeros((count, self.channels), dtype=np.float32)
        part = self.audio[position : position + count]
        chunk[: len(part)] = part
        return chunk if channels == self.channels else chunk.mean(axis=1, keepdims=True)

    def refresh(self) -> None:
        if not self.present:
            if self.absent_refreshes > 0:
                self.absent_refreshes -= 1
            else:
                self.present = True


class PlaylistDevice(FakeInput):
    """A microphone in a room where a test plays WAV files: see tests/fake_microphone/sitecustomize.py.

    Files are played in name order, each once, in real time; between them the room is silent. A
    file is renamed NAME.wav.played once its last sample has been handed over, or NAME.wav.cut
    when the device vanished while it played (the rest of it was never heard, as in a real room);
    one it cannot play (another rate, unreadable) becomes NAME.wav.rejected with the reason
    beside it in NAME.wav.rejected.txt. Nothing is played while the device is away: files
    dropped then wait for it to come back.
    """

    def __init__(
        self,
        directory: Path,
        *,
        index: int = 0,
        name: str = "Fake Microphone (playlist)",
        rate: int = 16000,
        channels: int = 1,
        only_native_channels: bool = False,
    ) -> None:
        # Only the claimed rate is accepted, so a 48 kHz device really is resampled by its reader.
        super().__init__(
            index,
            name,
            rate=rate,
            channels=channels,
            rates=(rate,),
            only_native_channels=only_native_channels,
            fail_close=True,
        )
        self.directory = directory
        self._playing: Path | None = None
        self._audio = np.zeros((0, channels), dtype=np.float32)
        self._offset = 0

    @property
    def present(self) -> bool:  # type: ignore[override]
        return not (self.directory / "unplug").exists()

    def lost(self, position: int, rate: float) -> str | None:
        try:
            mode = (self.directory / "unplug").read_text().strip() or "finish"
        except FileNotFoundError:
            return None
        if mode not in LOSS_MODES:
            print(f"fake microphone: unknown unplug mode {mode!r}; using 'finish'", file=sys.stderr)
            mode = "finish"
        if self._playing is not None:
            self._retire(".cut")
        return mode

    def frames(self, position: int, count: int, channels: int) -> np.ndarray:
        chunk = np.zeros((count, self.channels), dtype=np.float32)
        filled = 0
        while filled < count and (self._playing is not None or self._next()):
            part = self._audio[self._offset : self._offset + count - filled]
            chunk[filled : filled + len(part)] = part
            filled += len(part)
            self._offset += len(part)
            if self._offset >= len(self._audio):
                self._retire(".played")
        return chunk if channels == self.channels else chunk.mean(axis=1, keepdims=True)

    def _next(self) -> bool:
        """Start the first waiting file; False when there is none."""
        for path in sorted(self.directory.glob("*.wav")):
            try:
                audio, rate = sf.read(path, dtype="float32", always_2d=True)
            except (sf.LibsndfileError, RuntimeError, OSError) as exc:
                self._reject(path, f"unreadable: {exc}")
                continue
            if rate != self.rate:
                self._reject(path, f"recorded at {rate} Hz; this device records at {self.rate} Hz")
                continue
            if audio.shape[1] != self.channels:
                # Mono played into a stereo device reaches both channels; stereo into mono is mixed.
                audio = audio.mean(axis=1, keepdims=True).repeat(self.channels, axis=1)
            self._playing, self._audio, self._offset = path, audio, 0
            return True
        return False

    def _retire(self, suffix: str) -> None:
        assert self._playing is not None
        self._playing.rename(self._playing.with_name(self._playing.name + suffix))
        self._playing, self._audio, self._offset = None, np.zeros((0, self.channels), dtype=np.float32), 0

    @staticmethod
    def _reject(path: Path, reason: str) -> None:
        print(f"fake microphone: {path.name} {reason}", file=sys.stderr)
        rejected = path.with_name(path.name + ".rejected")
        rejected.with_name(rejected.name + ".txt").write_text(reason + "\n")
        path.rename(rejected)


class FakeStream:
    """sounddevice.InputStream's surface: a thread calls back with blocks into one reused buffer."""

    def __init__(
        self,
        device: FakeInput,
        samplerate: float,
        channels: int,
        blocksize: int,
        callback: Any,
        finished_callback: Any,
    ) -> None:
        self.device = device
        self.rate = samplerate
        self.channels = channels
        self.blocksize = blocksize
        self.callback = callback
        self.finished_callback = finished_callback
        self.active = False
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fake-portaudio", daemon=True)
        self.delivered: list[tuple[int, np.ndarray]] = []
        device.delivered.append(self.delivered)

    def start(self) -> None:
        self.active = True
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=2)
        self.active = False
        if self.lost and self.device.fail_close:
            self.lost = False  # reported once, as PortAudio does; close() then succeeds
            raise sounddevice.PortAudioError("Unanticipated host error [PaErrorCode -9999]: 'device disconnected'")

    def close(self) -> None:
        self.stop()

    def _run(self) -> None:
        clock_start, position = self.device.origin(self.rate)
        buffer = np.empty((self.blocksize, self.channels), dtype=np.float32)
        while not self._stop.is_set():
            due = clock_start + (position + self.blocksize) / self.rate
            if self._stop.wait(max(0.0, due - time.monotonic())):
                return
            mode = self.device.lost(position, self.rate)
            if mode is not None:
                self.lost = True
                if mode == "finish":
                    self.active = False
                    self.finished_callback()
                return  # "stall": the stream stays active but nothing more arrives
            buffer[:] = self.device.frames(position, self.blocksize, self.channels)
            self.delivered.append((position, buffer.copy()))
            self.callback(buffer, self.blocksize, SimpleNamespace(inputBufferAdcTime=0.0), sounddevice.CallbackFlags())
            buffer[:] = np.nan  # PortAudio reuses its buffer: a callback that kept it would see this
            position += self.blocksize


class FakePortAudio:
    """The parts of sounddevice the microphone calls, over a list of fake devices."""

    def __init__(self, devices: list[FakeInput], default: int = 0) -> None:
        self.devices = devices
        self.default = default
        self.refreshes = 0

    def replacements(self) -> dict[str, Callable[..., Any]]:
        return {
            "query_devices": self.query_devices,
            "check_input_settings": self.check_input_settings,
            "InputStream": self.input_stream,
            "_terminate": lambda: None,
            "_initialize": self._initialize,
        }

    def install(self, monkeypatch: pytest.MonkeyPatch) -> FakePortAudio:
        """For one test: monkeypatch puts the real functions back afterwards."""
        for name, fake in self.replacements().items():
            monkeypatch.setattr(sounddevice, name, fake)
        return self

    def install_for_good(self, sd: ModuleType = sounddevice) -> FakePortAudio:
        """For the rest of the process (a daemon subprocess): real PortAudio is shut down first."""
        # sounddevice initialised PortAudio when it was imported, and its exit handler calls
        # `_terminate` until its count is zero: with `_terminate` faked that would loop forever.
        while sd._initialized:
            sd._terminate()
        for name, fake in self.replacements().items():
            setattr(sd, name, fake)
        return self

    def _listed(self) -> list[FakeInput]:
        return [d for d in self.devices if d.present]

    def _info(self, position: int, device: FakeInput) -> dict[str, Any]:
        # PortAudio numbers devices by their position in its list, which changes as devices come and go.
        return {
            "name": device.name,
            "index": position,
            "hostapi": 0,
            "max_input_channels": device.channels,
            "max_output_channels": 2,
            "default_samplerate": float(device.rate),
        }

    def query_devices(self, device: int | None = None, kind: str | None = None) -> Any:
        listed = self._listed()
        if device is None and kind == "input":
            for position, d in enumerate(listed):
                if d.index == self.default:
                    return self._info(position, d)
            raise sounddevice.PortAudioError("Error querying device -1")
        return [self._info(position, d) for position, d in enumerate(listed)]

    def _device(self, index: int) -> FakeInput:
        listed = self._listed()
        if not 0 <= index < len(listed):
            raise sounddevice.PortAudioError(f"Error querying device {index}")
        return listed[index]

    def check_input_settings(self, device: int, channels: int, dtype: str, samplerate: float) -> None:
        assert dtype == "float32"
        if not self._device(device).supports(samplerate, channels):
            raise sounddevice.PortAudioError("Invalid sample rate [PaErrorCode -9997]")

    def input_stream(
        self,
        *,
        device: int,
        samplerate: float,
        channels: int,
        dtype: str,
        blocksize: int,
        callback: Any,
        finished_callback: Any,
    ) -> FakeStream:
        self.check_input_settings(device, channels, dtype, samplerate)
        return FakeStream(self._device(device), samplerate, channels, blocksize, callback, finished_callback)

    def _initialize(self) -> None:
        self.refreshes += 1
        for d in self.devices:
            d.refresh()


# --- the test's side of a PlaylistDevice ---------------------------------------------------------


class Playlist:
    """Plays recordings into a daemon's fake microphone and pulls its plug (the protocol's writer)."""

    def __init__(
        self, directory: Path, *, rate: int = 16000, channels: int = 1, only_native_channels: bool = False
    ) -> None:
        self.directory = directory
        self.rate = rate
        self.channels = channels
        self.only_native_channels = only_native_channels
        self._count = 0
        directory.mkdir(parents=True, exist_ok=True)

    def env(self) -> dict[str, str]:
        """The environment that makes tests/fake_microphone/sitecustomize.py install this device."""
        return {
            "ASSISTANT_FAKE_MIC": str(self.directory),
            "ASSISTANT_FAKE_MIC_RATE": str(self.rate),
            "ASSISTANT_FAKE_MIC_CHANNELS": str(self.channels),
            "ASSISTANT_FAKE_MIC_NATIVE": "1" if self.only_native_channels else "0",
        }

    def play(self, wav: Path) -> Path:
        """Queue `wav` (already at the device's rate) after what is queued; returns its playlist name."""
        self._count += 1
        target = self.directory / f"{self._count:04d}-{wav.stem}.wav"
        # Written under another name and renamed, so the device never reads half a file.
        partial = target.with_name(target.name + ".part")
        shutil.copyfile(wav, partial)
        os.replace(partial, target)
        return target

    def wait_played(self, queued: Path, timeout: float = 60) -> None:
        done = queued.with_name(queued.name + ".played")
        deadline = time.monotonic() + timeout
        while not done.exists():
            for outcome in (".cut", ".rejected"):
                if queued.with_name(queued.name + outcome).exists():
                    raise AssertionError(f"{queued.name} was not played whole: {outcome[1:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{queued.name} was not played within {timeout} s")
            time.sleep(0.05)

    def unplug(self, mode: str = "finish") -> None:
        assert mode in LOSS_MODES
        # Renamed into place: the device must never read the file before its mode is in it.
        partial = self.directory / "unplug.part"
        partial.write_text(mode)
        os.replace(partial, self.directory / "unplug")

    def replug(self) -> None:
        (self.directory / "unplug").unlink(missing_ok=True)
