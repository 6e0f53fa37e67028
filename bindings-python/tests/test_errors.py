"""The error mapping: every core ErrorKind, through the one conversion the binding uses."""

from __future__ import annotations

import fencelock
from fencelock import _native

EXPECTED = {
    "InvalidArgument": ValueError,
    "NotAcquired": fencelock.NotAcquired,
    "NotHeld": fencelock.LockLost,
    "Unavailable": fencelock.Unavailable,
    "Redis": fencelock.ServerError,
    "WrongKind": fencelock.WrongKind,
    "Cancelled": KeyboardInterrupt,
}


def test_every_error_kind_maps_to_its_exception() -> None:
    kinds = _native._error_kinds()
    # A kind added to the core must be added here (and to the binding's match).
    assert sorted(kinds) == sorted(EXPECTED)
    for kind in kinds:
        exc = _native._error_for_kind(kind, f"detail of {kind}")
        assert type(exc) is EXPECTED[kind], kind
        assert str(exc) == f"detail of {kind}"


def test_the_hierarchy() -> None:
    assert issubclass(fencelock.LockError, Exception)
    assert issubclass(fencelock.NotAcquired, fencelock.LockError)
    assert issubclass(fencelock.NotAcquired, TimeoutError)
    assert issubclass(fencelock.LockLost, fencelock.LockError)
    assert issubclass(fencelock.Unavailable, fencelock.LockError)
    assert issubclass(fencelock.Unavailable, ConnectionError)
    assert issubclass(fencelock.ServerError, fencelock.LockError)
    assert issubclass(fencelock.WrongKind, fencelock.LockError)
    assert not issubclass(KeyboardInterrupt, fencelock.LockError)
    assert not issubclass(ValueError, fencelock.LockError)
    for cls in (fencelock.LockError, fencelock.NotAcquired, fencelock.LockLost,
                fencelock.Unavailable, fencelock.ServerError, fencelock.WrongKind):
        assert cls.__module__ == "fencelock"
        assert cls.__doc__
        e = cls("message")
        assert str(e) == "message"


def test_every_public_name_has_a_docstring() -> None:
    import fencelock.asyncio as fa

    for mod in (fencelock, fa):
        for public in mod.__all__:
            obj = getattr(mod, public)
            if public in ("__version__", "TRACE"):
                continue
            assert obj.__doc__, f"{mod.__name__}.{public}"
            for attr, member in vars(obj).items():
                if attr.startswith("_") or not callable(member) and not isinstance(member, property) and type(member).__name__ != "getset_descriptor":
                    continue
                assert getattr(member, "__doc__", None), f"{mod.__name__}.{public}.{attr}"
