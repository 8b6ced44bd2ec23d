"""Hypothesis strategies for Unicode text that stresses canonicalisation."""

from __future__ import annotations

from hypothesis import strategies as st

# Characters chosen to hit every branch: ASCII words and punctuation, letters whose case fold is
# special (ß, İ, final sigma, Kelvin sign), combining marks, emoji (4-byte UTF-8), CJK, digits
# from other scripts, underscore, curly quotes and dashes, and a lone surrogate.
TRICKY = list(
    "abcXYZ019_ .,;!?'\"\n\t-"
    "ÄÖÜäöüßẞİıΣσςΚK"
    "\u0301\u0308\u20dd"
    "😀👍🏽🇫🇷"
    "中文字漢한국어日本"
    "٣٤߁"
    "“”‘’—–…"
    "\ud800\udfff"
)

tricky_text = st.text(alphabet=st.sampled_from(TRICKY), max_size=120)
any_text = st.text(alphabet=st.characters(), max_size=120)
texts = st.one_of(tricky_text, any_text)
