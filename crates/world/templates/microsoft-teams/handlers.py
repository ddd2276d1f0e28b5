"""Microsoft Teams schema foundation. No simulated tools are declared."""
