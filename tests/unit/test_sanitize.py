"""Foreign text made one safe line."""

from app.core.sanitize import clean_line


def test_clean_line_cuts_at_a_word() -> None:
    """A reason cut to fit ends at a word ("… a virtual machine's virtio disk) reports n" read as a typo)."""
    text = "a conventional PCI bus (a virtual machine's virtio disk) reports no link"
    cut = clean_line(text, 64)
    assert cut.endswith("…") and text.startswith(cut[:-1]) and cut[:-1].split()[-1] in text.split()
    assert len(cut) <= 64 and "reports n…" not in cut
