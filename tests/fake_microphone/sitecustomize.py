"""A fake microphone for a daemon subprocess: put this directory first on its PYTHONPATH.

Python imports `sitecustomize` at startup. When ASSISTANT_FAKE_MIC names a directory, this one
replaces the hardware end of the real `sounddevice` module (`query_devices`,
`check_input_settings`, `InputStream`, `_initialize`, `_terminate`: what tests/fake_portaudio.py
fakes in-process too) with a single input device, the system default, that hears what the test
plays into that directory. Everything above it (the microphone source, VAD, whisper, the
database) is the real code. Without ASSISTANT_FAKE_MIC nothing is imported or changed.

The protocol (tests/fake_portaudio.py's `Playlist` is the test's side of it):

    ASSISTANT_FAKE_MIC=DIR            the playlist directory (made by the test)
    ASSISTANT_FAKE_MIC_RATE=48000     the only rate the device records at (default 16000)
    ASSISTANT_FAKE_MIC_CHANNELS=2     its channels (default 1)
    ASSISTANT_FAKE_MIC_NATIVE=1       refuse fewer channels than it has (so the reader downmixes)
    ASSISTANT_FAKE_MIC_NAME=...       its name (default "Fake Microphone (playlist)")

    DIR/*.wav         played in name order, each once, in real time, while a stream is open;
                      silence when none waits. A file must be recorded at the device's rate
                      (channels are mixed or copied to fit) and must appear whole: write it
                      under another name and rename it.
    DIR/X.wav.played  X was played to its last sample.
    DIR/X.wav.cut     the device vanished while X played; the rest of X was never heard.
    DIR/X.wav.rejected  X could not be played; X.wav.rejected.txt says why.
    DIR/unplug        while it exists the device is gone: the open stream ends (or stalls),
                      the device is missing from PortAudio's list, opening it fails, and
                      stopping the stream that lost it raises PortAudioError. Its content is
                      how the stream experiences it: "finish" (or empty; PortAudio ends the
                      stream) or "stall" (the stream stays active but silent). Delete it to
                      plug the device back in; files dropped meanwhile wait for it.

An existing `sitecustomize` further down sys.path (a distribution's, coverage's) is shadowed
by this one, so it is run from here first and its names are copied into this module.
"""

from __future__ import annotations

import os
import sys


def _run_the_shadowed_sitecustomize() -> None:
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    globals().update({k: v for k, v in vars(module).items() if not k.startswith("__")})


def _install_fake_microphone(directory: str) -> None:
    import importlib.util
    from pathlib import Path

    # Loaded by path, not as `tests.fake_portaudio`: the repository root is not on sys.path yet
    # (python -m adds the working directory after site runs), and another `tests` may be.
    source = Path(__file__).resolve().parents[1] / "fake_portaudio.py"
    spec = importlib.util.spec_from_file_location("fake_portaudio", source)
    assert spec is not None and spec.loader is not None
    fake = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = fake  # so whatever looks a class's module up by name finds it
    spec.loader.exec_module(fake)
    device = fake.PlaylistDevice(
        Path(directory),
        name=os.environ.get("ASSISTANT_FAKE_MIC_NAME", "Fake Microphone (playlist)"),
        rate=int(os.environ.get("ASSISTANT_FAKE_MIC_RATE", "16000")),
        channels=int(os.environ.get("ASSISTANT_FAKE_MIC_CHANNELS", "1")),
        only_native_channels=os.environ.get("ASSISTANT_FAKE_MIC_NATIVE", "") not in ("", "0"),
    )
    fake.FakePortAudio([device], default=device.index).install_for_good()
    what = f"{device.name!r} at {device.rate} Hz x {device.channels} ch"
    print(f"fake microphone: {what} plays {directory}", file=sys.stderr)


_run_the_shadowed_sitecustomize()
if os.environ.get("ASSISTANT_FAKE_MIC"):
    _install_fake_microphone(os.environ["ASSISTANT_FAKE_MIC"])
