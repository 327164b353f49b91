"""Batches to the model's device and results back, with the copies overlapping the model's work on a GPU.

On CUDA the token arrays are put in page-locked (pinned) host memory and copied on a stream of
their own (``non_blocking``), which the model's stream waits for; each batch's result is
copied back on a third stream into pinned memory while the next batch computes. Nothing
waits for the GPU until :meth:`DeviceCopies.gather`. On a CPU the same calls only wrap the
arrays as tensors (no copy), so the encoders run one code path on both. torch is imported
when one is made.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class DeviceCopies:
    """Moves one call's batches to ``device`` and collects the results on the host, in order."""

    def __init__(self, device: str) -> None:
        import torch

        self._torch = torch
        self.cuda = device.startswith("cuda")
        self._results: list[Any] = []
        if self.cuda:
            self.device = torch.device(device)
            self._compute = torch.cuda.current_stream(self.device)
            self._upload = torch.cuda.Stream(self.device)
            self._download = torch.cuda.Stream(self.device)
        else:
            self.device = torch.device("cpu")

    def inputs(self, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
        """``arrays`` as tensors on the device; on CUDA the model's stream waits for their copy, nothing else does."""
        torch = self._torch
        host = {name: torch.from_numpy(np.ascontiguousarray(array)) for name, array in arrays.items()}
        if not self.cuda:
            return host
        pinned = {name: tensor.pin_memory() for name, tensor in host.items()}
        with torch.cuda.stream(self._upload):
            # The caching host allocator keeps each pinned block until its copy has run.
            moved = {name: tensor.to(self.device, non_blocking=True) for name, tensor in pinned.items()}
        self._compute.wait_stream(self._upload)
        for tensor in moved.values():
            tensor.record_stream(self._compute)  # made on the copy stream, used and freed on the model's
        return moved

    def output(self, tensor: Any) -> None:
        """Keep one batch's result (copied back to pinned host memory behind the model's work on CUDA)."""
        torch = self._torch
        if not self.cuda:
            self._results.append(tensor)
            return
        host = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True)
        self._download.wait_stream(self._compute)
        with torch.cuda.stream(self._download):
            host.copy_(tensor, non_blocking=True)
        tensor.record_stream(self._download)  # its memory is not reused before the copy has read it
        self._results.append(host)

    def gather(self) -> np.ndarray:
        """Every result so far, concatenated in order, as numpy (waits for the copies on CUDA)."""
        torch = self._torch
        if self.cuda:
            self._download.synchronize()
        results, self._results = self._results, []
        if not results:
            return np.empty(0, dtype=np.float32)
        return torch.cat(results).numpy()
