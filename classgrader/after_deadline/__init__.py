"""After the deadline: the late policy and the item analysis."""
