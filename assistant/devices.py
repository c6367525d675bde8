"""Whether `auto` means a GPU: one answer for every model that can run on one."""

from __future__ import annotations


def pick_device(device: str) -> str:
    """`auto` means CUDA when CTranslate2 sees a GPU (it was built with CUDA and a device is present).

    CTranslate2 comes with faster-whisper and answers in a tenth of a second; asking torch would
    cost the two seconds of importing it, in processes that otherwise never need it.
    """
    if device != "auto":
        return device
    import ctranslate2

    try:
        return "cuda" if ctranslate2.get_cuda_device_count() > 0 else "cpu"
    except RuntimeError:  # a CUDA runtime that fails to initialise is the same as no GPU for us
        return "cpu"
