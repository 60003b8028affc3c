// Keeps mlpd_test_support non-empty before any support file exists.
