DROP TABLE cohorts;
