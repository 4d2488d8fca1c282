select
    d.project_id,
    t.worked_on,
    sum(t.hours) as hours,
    sum(t.hours * t.hourly_rate) as labor_cost
from {{ ref('stg_field_ops__time_entries') }} as t
join {{ ref('stg_field_ops__work_orders') }} as w on w.work_order_id = t.work_order_id
join {{ ref('dim_project') }} as d on d.project_id = w.project_id
group by 1, 2
