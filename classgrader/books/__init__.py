"""What a class run writes: nbgrader's gradebook, the class reports and the LMS import files."""
