"""The gradebook: scores under each assignment's policy, manual adjustments with their audit
log, class insight and exports."""
