"""A model's ``state_dict`` to safetensors bytes and back, tied tensors stored once.

Tied tensors (two names for one tensor, such as an embedding shared with an output head) are
saved under their first name in ``state_dict`` order (the name ``named_parameters`` reports)
and listed as aliases; on load every name of a tie group is filled from whichever of its
names the file holds. Distinct views of one storage are saved as separate copies,
non-contiguous tensors as contiguous ones, and device tensors from the CPU. Loading checks
names, shapes and dtypes against the model built from the manifest config before copying
anything into it.
"""

from __future__ import annotations

from collections import defaultdict

import torch
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors
from torch import Tensor, nn

__all__ = ["from_safetensors", "to_safetensors"]


def _same_view(a: Tensor, b: Tensor) -> bool:
    return (
        a.data_ptr() == b.data_ptr()
        and a.shape == b.shape
        and a.stride() == b.stride()
        and a.dtype == b.dtype
    )


def _storage_groups(state: dict[str, Tensor]) -> list[list[str]]:
    """Names whose tensors share a storage, groups of two or more, in ``state_dict`` order."""
    groups: dict[tuple[str, int], list[str]] = defaultdict(list)
    for name, t in state.items():
        if t.device.type != "meta" and t.untyped_storage().nbytes() > 0:
            groups[(str(t.device), t.untyped_storage().data_ptr())].append(name)
    return [g for g in groups.values() if len(g) > 1]


def _tie_partners(state: dict[str, Tensor]) -> dict[str, list[str]]:
    """``name -> other names of the very same tensor`` (tied weights)."""
    partners: dict[str, list[str]] = {}
    for group in _storage_groups(state):
        for name in group:
            partners[name] = [o for o in group if o != name and _same_view(state[o], state[name])]
    return partners


def to_safetensors(model: nn.Module) -> tuple[bytes, dict[str, str]]:
    """``(file bytes, {alias: saved name})`` for ``model.state_dict()``."""
    state = model.state_dict()
    aliases: dict[str, str] = {}
    copies: set[str] = set()
    for group in _storage_groups(state):
        for name in group:
            if name in aliases:
                continue
            same = [o for o in group if o != name and _same_view(state[o], state[name])]
            aliases.update({o: name for o in same})
            if len(same) + 1 < len(group):  # other views of this storage: save a copy
                copies.add(name)
    tensors = {}
    for name, t in state.items():
        if name in aliases:
            continue
        t = t.detach().cpu()
        tensors[name] = t.clone().contiguous() if name in copies else t.contiguous()
    return save_safetensors(tensors, metadata={"format": "pt"}), aliases


def from_safetensors(model: nn.Module, data: bytes) -> None:
    """Copy the tensors in ``data`` into ``model`` after checking names, shapes and dtypes.

    If every floating-point tensor in the file has one dtype (say ``bfloat16``) the model is
    cast to it first, so a model saved in reduced precision comes back in that precision.
    Tensors the model names in its ``RETIRED_TENSORS`` (held by files of earlier versions,
    no longer part of the model) are left out.

    Raises:
        ValueError: a name is missing from the file or unknown to the model, or a shape or
            dtype differs; the message names the first such tensor.
    """
    tensors = load_safetensors(data)  # tensors only: safetensors cannot hold code
    retired: frozenset[str] = getattr(model, "RETIRED_TENSORS", frozenset())
    tensors = {k: v for k, v in tensors.items() if k not in retired}
    float_dtypes = {t.dtype for t in tensors.values() if t.is_floating_point()}
    if len(float_dtypes) == 1:
        (dtype,) = float_dtypes
        if any(p.is_floating_point() and p.dtype != dtype for p in model.state_dict().values()):
            model.to(dtype)
    expected = model.state_dict()
    partners = _tie_partners(expected)
    full: dict[str, Tensor] = {}
    for name, want in expected.items():
        held = [n for n in [name, *partners.get(name, [])] if n in tensors]
        if not held:
            raise ValueError(
                f"tensor {name!r} {tuple(want.shape)} of the model is missing from the file "
                f"(which holds {len(tensors)} tensors)"
            )
        found = tensors[held[0]]
        if found.shape != want.shape or found.dtype != want.dtype:
            raise ValueError(
                f"tensor {held[0]!r} is {tuple(found.shape)} {found.dtype} in the file but the "
                f"model built from the manifest config expects {tuple(want.shape)} {want.dtype}"
            )
        if any(not torch.equal(found, tensors[other]) for other in held[1:]):
            raise ValueError(f"tied tensors {held} differ in the file; the model ties them")
        full[name] = found
    unknown = sorted(set(tensors) - set(expected))
    if unknown:
        raise ValueError(
            f"the file holds {len(unknown)} tensors the model does not have, first "
            f"{unknown[0]!r} {tuple(tensors[unknown[0]].shape)}"
        )
    model.load_state_dict(full, strict=True)
