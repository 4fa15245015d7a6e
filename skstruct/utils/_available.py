"""scikit-learn's ``available_if``, with the reason a method is unavailable in its error."""

from sklearn.utils._available_if import _AvailableIfDescriptor

__all__ = ["available_if_with_reason"]


class _AvailableIfWithReason(_AvailableIfDescriptor):
    """scikit-learn's ``available_if`` whose AttributeError also says why: the message
    of the exception ``check`` raised is appended to "This 'X' has no attribute 'm'"."""

    def _check(self, obj, owner):
        try:
            super()._check(obj, owner)
        except AttributeError as exc:
            if exc.__cause__ is None:
                raise
            raise AttributeError(f"{exc}: {exc.__cause__}") from exc.__cause__


def available_if_with_reason(check):
    """Decorator: the method exists where ``check(estimator)`` is true; where ``check``
    raises an AttributeError, ``hasattr`` is False and the error carries its message."""
    return lambda fn: _AvailableIfWithReason(fn, check=check, attribute_name=fn.__name__)
