#!/usr/bin/env bash
# The audio stage's figures in BENCHMARKS.md ("Audio stage"): webrtcvad and the Silero check on
# ten minutes of espeak-ng speech, and a two-hour FLAC of silence and noise streamed through
# decoding and segmentation. Needs espeak-ng and sox; run from anywhere, prints the figures.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p /tmp/audio-stage && cd /tmp/audio-stage
espeak-ng -v en-us -w a.wav "I will send the slides on Tuesday, after the budget meeting."
espeak-ng -v en+f3 -w b.wav "Sam said the Lisbon trip moves to May."
sox -D -R a.wav b.wav -r 16000 -c 1 -b 16 pair.wav pad 0 1
sox -D -R pair.wav speech.wav repeat 99 trim 0 600
sox -D -R -n -r 16000 -c 1 -b 16 quiet.flac trim 0 3600
sox -D -R -n -r 16000 -c 1 -b 16 noise.flac synth 3600 brownnoise vol 0.05
sox -D -R quiet.flac noise.flac long.flac
cd "$repo" && .venv/bin/python - <<'PY'
import dataclasses, resource, time
from assistant.audio.files import FileSource
from assistant.audio.silero import SileroCheck
from assistant.audio.vad import Segmenter, speech_segments
from assistant.config import load_settings

vad = load_settings(user_file="/nonexistent.yaml").vad
t = time.process_time()
found = list(Segmenter(vad).run(FileSource("/tmp/audio-stage/speech.wav", start_time=0.0)))
print(f"webrtcvad on 600 s of speech: {len(found)} segments, CPU {time.process_time() - t:.2f} s")
t = time.perf_counter()
silero = SileroCheck(vad.silero_threshold)
print(f"silero load: {time.perf_counter() - t:.2f} s")
t = time.process_time()
kept = list(silero.filter(found))
seconds = sum(s.duration for s in found)
print(f"silero: {len(kept)} of {len(found)} kept, CPU {1000 * (time.process_time() - t) / seconds:.1f} ms per s")
for silero_on in (False, True):
    opts = dataclasses.replace(vad, silero=silero_on)
    t = time.process_time()
    n = len(list(speech_segments(FileSource("/tmp/audio-stage/long.flac", start_time=0.0), opts)))
    print(f"2 h FLAC, silero {silero_on}: {n} segments, CPU {time.process_time() - t:.1f} s")
print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
PY
