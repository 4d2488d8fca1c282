"""One router per resource; each carries its access dependency."""
