"""perceive's exceptions: one class per pv_status, each carrying the C library's message."""

# pv_status values (include/perceive.h)
PV_OK, PV_EINPUT, PV_ENOWEIGHTS, PV_EFORMAT, PV_ENOMEM, PV_EUNSUPPORTED, PV_ECLOSED, PV_EINTERNAL = range(8)


class PerceiveError(Exception):
    """Base of every perceive error. .status is the pv_status code, .message the C message."""

    status = PV_EINTERNAL

    def __init__(self, message, status=None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status


class InputError(PerceiveError, ValueError):
    """PV_EINPUT: the caller's input is wrong (the message names the field and value)."""
    status = PV_EINPUT


class WeightsError(PerceiveError):
    """PV_ENOWEIGHTS: the model's artifacts were not found (the message says how to fetch them)."""
    status = PV_ENOWEIGHTS


class FormatError(PerceiveError, ValueError):
    """PV_EFORMAT: a file or buffer is malformed."""
    status = PV_EFORMAT


class OutOfMemoryError(PerceiveError, MemoryError):
    """PV_ENOMEM: an allocation failed."""
    status = PV_ENOMEM


class UnsupportedError(PerceiveError, NotImplementedError):
    """PV_EUNSUPPORTED: a valid input perceive does not implement (format, op, dtype)."""
    status = PV_EUNSUPPORTED


class ClosedError(PerceiveError):
    """PV_ECLOSED: the model or graph was closed."""
    status = PV_ECLOSED


class InternalError(PerceiveError):
    """PV_EINTERNAL: a bug in perceive."""
    status = PV_EINTERNAL


_BY_STATUS = {c.status: c for c in (InputError, WeightsError, FormatError, OutOfMemoryError,
                                    UnsupportedError, ClosedError, InternalError)}


def error_for(status, message):
    """The exception for a failed call's status and message."""
    cls = _BY_STATUS.get(status, PerceiveError)
    return cls(message or "perceive: status %d" % status, status)
