"""The core layer: errors, units, text cleaning, plain tables, who is another user, settings."""
