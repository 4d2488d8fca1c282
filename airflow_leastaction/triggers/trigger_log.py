"""What a trigger class shares across its instances: one logger, and the class path Airflow stores."""

from __future__ import annotations

import structlog


class ClassLog:
    """``self.log`` as one logger per trigger class, not one per instance.

    Airflow's ``LoggingMixin`` builds a logger for each trigger object on its first log line: eight objects
    that live as long as the trigger waits, and ten thousand waiting gates in one triggerer make every full
    garbage collection walk them. Lines are named as before (module and class) and still reach each
    trigger's own log: the triggerer routes a line by the trigger id it binds in the trigger's context, not
    by the logger object.
    """

    @property
    def log(self):
        cls = type(self)
        logger = cls.__dict__.get("_leastaction_log")
        if logger is None:
            logger = structlog.get_logger(f"{cls.__module__}.{cls.__name__}")
            cls._leastaction_log = logger
        return logger

    @classmethod
    def classpath(cls) -> str:
        """The path Airflow stores with the trigger's row and imports the class by."""
        return f"{cls.__module__}.{cls.__qualname__}"
