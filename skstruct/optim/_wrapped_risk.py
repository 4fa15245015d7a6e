"""The base of the risks that present another risk in other terms."""


class WrappedRisk:
    """A risk G defined through another risk F (``risk``): it reads F's ``loss``,
    ``alpha``, ``n_examples`` and ``n_params``; subclasses define
    ``value_and_gradient``.

    Parameters
    ----------
    risk : RegularizedRisk
        F.
    """

    def __init__(self, risk):
        self.risk = risk
        self.loss = risk.loss

    @property
    def alpha(self):
        return self.risk.alpha

    @property
    def n_examples(self):
        return self.risk.n_examples

    @property
    def n_params(self):
        return self.risk.n_params

    def compiled_objective(self):
        """F's compiled evaluation (whether BLAS may run single-threaded); G itself is
        evaluated through ``value_and_gradient``."""
        return self.risk.compiled_objective()
