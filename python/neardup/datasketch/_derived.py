"""Objects that keep state derived from their attributes for speed (transposed tables, search
arrays): pickled without it, since it is made again on first use."""


class DerivedState:
    """Pickles the instance's attributes but those named in ``_derived``."""

    _derived: tuple = ()

    def __getstate__(self):
        state = self.__dict__.copy()
        for name in self._derived:
            state.pop(name, None)
        return state
