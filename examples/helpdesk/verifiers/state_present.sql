-- Scores 1.0 once every priority-1 ticket is solved.
SELECT CASE WHEN COUNT(*) = 0 THEN 1.0 ELSE 0.0 END FROM "tickets" WHERE "priority" = 1 AND "status" != 'solved';
